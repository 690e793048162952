import Foundation
import ListCRDT

/// Simulated typing into a text field (Docs/Semantics.md §8.5): every text edit of the simulator
/// splices the field `notes` of an item, at a random place, removing a few characters now and
/// then and typing a short fresh run (a unique token, so the oracle can tell runs apart).
enum TextTyping {
    /// The text field the simulator types into.
    static let field = "notes"

    /// A random splice of `item`'s notes.
    static func random(_ item: IndexPath, using rng: inout SplitMix64, fresh: () -> String) -> RandomEdit {
        let delete = rng.below(4) == 0 ? 1 + rng.below(4) : 0
        let insert = delete > 0 && rng.below(3) == 0 ? "" : "<" + fresh() + ">"
        return .spliceItemText(item, atPerMille: rng.below(1001), delete: delete, insert: insert)
    }

    /// Makes the splice on `document`, its place and length clamped to the text it shows.
    static func apply(_ p: IndexPath, atPerMille: Int, delete: Int, insert: String,
                      to document: inout ListDocument) throws(ListError) -> ListOperation? {
        let item = try document.itemID(at: p)
        let count = document.text(field, ofItem: item)?.unicodeScalars.count ?? 0
        let at = count * atPerMille / 1000
        let d = min(delete, count - at)
        if d == 0 && insert.isEmpty { return nil }
        return try document.splice(field, ofItem: item, at: at, delete: d, insert: insert)
    }
}

extension SemanticsOracle {
    /// What the text edits imply for every text field shown (Docs/Semantics.md §8.5), from the
    /// whole set of edits at once: exactly the characters typed and not removed by any edit are
    /// shown (compared as multisets of scalars: none lost, none brought back), and every run one
    /// edit typed that nobody removed from is shown whole, unless another edit typed inside it.
    ///
    /// - Complexity: O(c log c) for c characters typed.
    public func checkText(_ snapshot: ListSnapshot) -> [String] {
        var failures: [String] = []
        func check(_ fields: [String: Field], of entity: OpID, _ label: String) {
            for (name, list) in fieldWrites[entity] ?? [:] {
                var typed: [OpID: Unicode.Scalar] = [:]
                var runs: [(OpID, String)] = []
                var removed = Set<OpID>()
                var valueWrites = false
                for w in list {
                    switch w.write.change {
                    case .text(let e):
                        for (k, c) in e.insert.unicodeScalars.enumerated() { typed[w.id.advanced(by: k)] = c }
                        if !e.insert.isEmpty { runs.append((w.id, e.insert)) }
                        for r in e.deletes { for k in 0 ..< r.count { removed.insert(r.first.advanced(by: k)) } }
                    case .set, .remove: valueWrites = true
                    default: break
                    }
                }
                // Only fields nothing but splices wrote (a value write resets what it saw).
                guard !typed.isEmpty || !removed.isEmpty, !valueWrites else { continue }
                guard case .text(let shown)? = fields[name] else {
                    failures.append("\(label).\(name) is not text though only splices wrote it")
                    continue
                }
                let expected = typed.filter { !removed.contains($0.key) }.map(\.value.value).sorted()
                let got = shown.unicodeScalars.map(\.value).sorted()
                if expected != got {
                    failures.append("\(label).\(name) shows \(got.count) characters where the edits leave \(expected.count): \(shown.debugDescription)")
                }
                // A run nobody removed from shows whole, unless another edit typed inside it (its
                // origins are two characters of the run).
                var origins: [(after: OpID, before: OpID)] = []
                for w in list { if case .text(let e) = w.write.change, !e.insert.isEmpty { origins.append((e.after, e.before)) } }
                for (id, run) in runs {
                    let n = run.unicodeScalars.count
                    func inRun(_ x: OpID, _ range: Range<Int>) -> Bool {
                        x.replica == id.replica && x.counter >= id.counter + UInt64(range.lowerBound) && x.counter < id.counter + UInt64(range.upperBound)
                    }
                    guard (0 ..< n).allSatisfy({ !removed.contains(id.advanced(by: $0)) }) else { continue }
                    let typedInside = origins.contains { inRun($0.after, 0 ..< n - 1) || inRun($0.before, 1 ..< n) }
                    if !typedInside && !shown.contains(run) {
                        failures.append("\(label).\(name): the run \(run.debugDescription) is split")
                    }
                }
            }
        }
        for section in snapshot.sections {
            for item in section.items { check(item.fields, of: item.id.opID, "\(item.id)") }
        }
        return failures
    }
}
