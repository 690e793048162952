import ListCRDT
import ListSync

/// The cluster run's oracle, the same as the other modes': nothing acknowledged lost, every copy
/// the same, each operation and each value once, the semantics of the operations, every invariant.
extension ClusterSimulator {
    mutating func check() {
        if !isAtRest {
            report.failures.append("the cluster did not come to rest in \(configuration.healSteps) steps after the faults: \(pending.count) requests in flight, " +
                nodes.map { "\($0.name) \($0.machine.restState) consumer at \($0.consumer.map(String.init) ?? "none")" }.joined(separator: ", ") +
                ", stream ends at \(stream.lastBySubject)")
        }
        let reference = nodes[0].document.snapshot()
        for node in nodes {
            let doc = node.document
            if doc.pendingCount != 0 { report.failures.append("\(node.name) has \(doc.pendingCount) operations pending") }
            do { try doc.checkInvariants() } catch { report.failures.append("\(node.name): \(error)") }
            if node.index > 0 && doc.snapshot() != reference { report.failures.append("\(node.name) shows a different document than node0") }
            let lost = acknowledged.filter { !doc.version.contains($0.lastID) }
            if !lost.isEmpty { report.failures.append("\(node.name) lacks \(lost.count) acknowledged operations (first \(lost[0].id))") }
        }
        let all = nodes[0].document.operations
        var ids = Set<OpID>()
        for op in all where !ids.insert(op.id).inserted { report.failures.append("operation \(op.id) applied twice") }
        if let why = SemanticsOracle(all).check(reference) { report.failures.append("node0: \(why)") }
        report.failures += SemanticsOracle.valuesShownTwice(reference)
        report.items = reference.numberOfItems
        report.duplicatesStored = stream.duplicatesStored
        report.purged = stream.purged
        for node in nodes {
            for c in node.pastCounts + [node.machine.counts] {
                report.published += c.published
                report.snapshots += c.snapshots
                report.trims += c.trims
                report.trimsSkipped += c.trimsSkipped
                report.snapshotsLoaded += c.snapshotsLoaded
                report.republishes += c.republishes
                report.duplicateAcknowledgementsIgnored += c.duplicateAcknowledgements
                report.duplicateMessagesIgnored += c.duplicateMessages
            }
        }
    }
}
