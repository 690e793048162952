import Foundation
import ListCRDT

// Field writes on an item while it is being dragged (Docs/Simulation.md, "Field writes during a
// drag"): a drag in progress meets writes of the dragged item's fields made by its own client
// or by others, and the oracle's field checks (no field write lost, every increment counts)
// cover them as any other write.
extension Simulator {
    /// Now and then (``Workload/dragFieldWrites`` percent of a drag's hover steps, only with
    /// ``Workload/fieldWrites`` on), a client picked at random, the dragging one included, writes
    /// fields of `item` (one operation, ``FieldEdit``) and sends it. A client that does not have
    /// the item (not received yet, started afresh) or has it deleted writes nothing. Returns
    /// whether the dragging client `r` wrote.
    mutating func writeFieldsOfDraggedItem(_ item: ItemID, draggedBy r: Int) -> Bool {
        let workload = configuration.workload
        guard workload.fieldWrites > 0, workload.dragFieldWrites > 0, rng.below(100) < workload.dragFieldWrites else { return false }
        let c = rng.below(clients.count)
        let edits = FieldEdit.random(using: &rng)
        let before = clients[c].document.operationCount
        // Skewed wall clocks per client, as for other field writes (`makeEdit`).
        clients[c].document.wallClock = .fixed(1_700_000_000_000 + network.now + UInt64((c * 53) % 200))
        do {
            try clients[c].document.writeFields(FieldEdit.changes(edits), ofItem: item)
        } catch {
            switch error {
            case .unknownItem, .itemDeleted: return false
            default:
                report.failures.append("client \(c): fields \(edits) of the item \(item) client \(r) drags threw \(error)")
                return false
            }
        }
        report.fieldWrites += 1
        report.fieldChanges += edits.count
        report.increments += edits.filter { if case .increment = $0.change { true } else { false } }.count
        report.dragFieldWrites += 1
        if c == r { report.dragFieldWritesByDragger += 1 }
        publish(c, since: before)
        return c == r
    }
}
