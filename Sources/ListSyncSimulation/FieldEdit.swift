import Foundation
import ListCRDT

/// One field write a simulated user makes (Docs/Semantics.md §8), drawn from a small pool of
/// names and values so that concurrent writes meet on the same fields often: `title`, `done` and
/// `due` are value fields (sets of every value type, and removals), `votes` and `qty` counters
/// (increments, now and then a reset by a removal), `tags` a set (adds and removes of a few tags).
/// Now and then a write changes a field's kind (a set over a counter), which the merge allows.
public struct FieldEdit: Hashable, Sendable, CustomStringConvertible {
    /// The field's name.
    public var name: String
    /// What the write does to it.
    public var change: FieldChange

    /// The value field names, the counter names, the set's name and its members.
    static let valueNames = ["title", "done", "due"]
    static let counterNames = ["votes", "qty"]
    static let tags = ["red", "green", "blue", "urgent", "later", "home"]

    public var description: String { "\(name) \(change)" }

    /// One to three writes to distinct fields (one operation), drawn from `rng`.
    ///
    /// - Complexity: O(1).
    public static func random(using rng: inout SplitMix64) -> [FieldEdit] {
        var out: [FieldEdit] = []
        for _ in 0..<(1 + rng.below(3) / 2) {
            let edit = one(using: &rng)
            if !out.contains(where: { $0.name == edit.name }) { out.append(edit) }
        }
        return out
    }

    /// One to three first fields of a new record, drawn as ``random(using:)`` draws writes, with
    /// what an insert cannot carry made into what it can: a removal into a set of null, a set
    /// delete into an add.
    ///
    /// - Complexity: O(1).
    public static func randomInsert(using rng: inout SplitMix64) -> [FieldEdit] {
        random(using: &rng).map { edit in
            switch edit.change {
            case .remove: FieldEdit(name: edit.name, change: .set(.null))
            case .delete(let members): FieldEdit(name: edit.name, change: .insert(members))
            default: edit
            }
        }
    }

    static func one(using rng: inout SplitMix64) -> FieldEdit {
        let roll = rng.below(100)
        switch roll {
        case 0..<40:
            let name = valueNames[rng.below(valueNames.count)]
            return FieldEdit(name: name, change: rng.below(8) == 0 ? .remove : .set(value(using: &rng)))
        case 40..<70:
            let name = counterNames[rng.below(counterNames.count)]
            if rng.below(12) == 0 { return FieldEdit(name: name, change: .remove) }
            return FieldEdit(name: name, change: .increment(Int64(rng.below(9)) - 3))
        case 70..<97:
            var members: [String] = []
            for _ in 0..<(1 + rng.below(2)) {
                let tag = tags[rng.below(tags.count)]
                if !members.contains(tag) { members.append(tag) }
            }
            return FieldEdit(name: "tags", change: rng.below(3) == 0 ? .delete(members) : .insert(members))
        default:
            // A change of kind: a value written over a counter or a set, or an increment over a value.
            let names = counterNames + ["tags"]
            if rng.below(2) == 0 { return FieldEdit(name: names[rng.below(names.count)], change: .set(value(using: &rng))) }
            return FieldEdit(name: valueNames[rng.below(valueNames.count)], change: .increment(1))
        }
    }

    /// A value of a random type.
    static func value(using rng: inout SplitMix64) -> FieldValue {
        switch rng.below(7) {
        case 0: return .null
        case 1: return .bool(rng.below(2) == 0)
        case 2: return .int(Int64(rng.below(1000)) - 500)
        case 3: return .double(Double(rng.below(10_000)) / 8)
        case 4: return .date(Date(timeIntervalSince1970: Double(1_700_000_000_000 + UInt64(rng.below(1_000_000))) / 1000))
        case 5: return .bytes(Data((0..<rng.below(4)).map { _ in UInt8(rng.below(256)) }))
        default: return .string("s\(rng.below(50))")
        }
    }

    /// The writes as one operation's changes.
    static func changes(_ list: [FieldEdit]) -> [String: FieldChange] {
        Dictionary(list.map { ($0.name, $0.change) }, uniquingKeysWith: { a, _ in a })
    }
}
