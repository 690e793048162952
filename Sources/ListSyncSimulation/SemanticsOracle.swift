import ListCRDT
import ListSync
import ListTable
import Foundation

/// The rules of SEMANTICS §3.2–3.5 computed directly from a set of operations, independently of
/// the engine's data structures: which sections and items must be visible, in which section each
/// item must be, and which value each must show. Tests and the simulator compare every replica's
/// snapshot with it ("nothing lost, nothing duplicated").
///
/// - Complexity: O(m) to build for m operations; ``check(_:)`` is O(n) for n items.
public struct SemanticsOracle: Sendable {
    struct Register: Sendable { var write = OpID.none; var record = OpID.none; var section: SectionID?; var value = OpID.none; var data = Data() }
    var items: [ItemID: Register] = [:]
    var sections: [SectionID: Register] = [:]
    /// Every field write, by entity and field name (Docs/Semantics.md §8).
    var fieldWrites: [OpID: [String: [(clock: UInt64, id: OpID, write: FieldWrite)]]] = [:]

    /// The values shown more than once in `snapshot`, each as a failure line (the simulator's
    /// edits give every value once, so a value twice is an operation applied twice).
    ///
    /// - Complexity: O(n) for n items.
    public static func valuesShownTwice(_ snapshot: ListSnapshot) -> [String] {
        var values = Set<[UInt8]>(), out: [String] = []
        for section in snapshot.sections {
            for item in section.items where !values.insert(Array(item.value)).inserted {
                out.append("value \(String(decoding: item.value, as: UTF8.self)) is shown twice")
            }
        }
        return out
    }

    /// Computes the registers of every section and item from the operations (any order).
    public init(_ ops: [ListOperation]) {
        // A delete names the slot of the write it saw; the write is the operation that made the slot.
        var writeOfSlot: [OpID: OpID] = [:]
        for op in ops {
            for k in 0..<op.span { writeOfSlot[op.id.advanced(by: k)] = op.id }
        }
        for op in ops {
            switch op.kind {
            case let .insertSection(_, value):
                sections[SectionID(op.id), default: Register()].write = max(sections[SectionID(op.id)]?.write ?? .none, op.id)
                setValue(&sections[SectionID(op.id), default: Register()], op.id, value)
            case let .insertSectionWithFields(_, value, writes):
                sections[SectionID(op.id), default: Register()].write = max(sections[SectionID(op.id)]?.write ?? .none, op.id)
                setValue(&sections[SectionID(op.id), default: Register()], op.id, value)
                for w in writes.writes {
                    fieldWrites[op.id, default: [:]][w.name, default: []].append((writes.clock, op.id, w))
                }
            case let .insertItem(section, _, value):
                write(&items[ItemID(op.id), default: Register()], op.id, section)
                setValue(&items[ItemID(op.id), default: Register()], op.id, value)
            case let .moveSection(s, _):
                write(&sections[s, default: Register()], op.id, nil)
            case let .moveItems(list, section, _):
                for item in list { write(&items[item, default: Register()], op.id, section) }
            case let .deleteItem(item, seen):
                items[item, default: Register()].record = max(items[item]?.record ?? .none, writeOfSlot[seen.opID] ?? seen.opID)
            case let .deleteSection(s, seen, list):
                sections[s, default: Register()].record = max(sections[s]?.record ?? .none, writeOfSlot[seen.opID] ?? seen.opID)
                for r in list { items[r.item, default: Register()].record = max(items[r.item]?.record ?? .none, writeOfSlot[r.seen.opID] ?? r.seen.opID) }
            case let .setItemValue(item, value): setValue(&items[item, default: Register()], op.id, value)
            case let .setSectionValue(s, value): setValue(&sections[s, default: Register()], op.id, value)
            case let .insertItemWithFields(section, _, value, writes):
                write(&items[ItemID(op.id), default: Register()], op.id, section)
                setValue(&items[ItemID(op.id), default: Register()], op.id, value)
                for w in writes.writes {
                    fieldWrites[op.id, default: [:]][w.name, default: []].append((writes.clock, op.id, w))
                }
            case let .writeFields(target, writes):
                for w in writes.writes {
                    fieldWrites[target.opID, default: [:]][w.name, default: []].append((writes.clock, op.id, w))
                }
            }
        }
    }

    private func write(_ r: inout Register, _ id: OpID, _ section: SectionID?) {
        if id > r.write { r.write = id; r.section = section }
    }
    private func setValue(_ r: inout Register, _ id: OpID, _ data: Data) {
        if id > r.value { r.value = id; r.data = data }
    }

    /// Nil if the snapshot shows exactly what the operations imply; else what differs.
    public func check(_ snapshot: ListSnapshot) -> String? {
        let liveItems = items.filter { $0.value.write > $0.value.record }
        var expectedSections = Set(sections.filter { $0.value.write > $0.value.record }.keys)
        for (_, r) in liveItems { expectedSections.insert(r.section!) }
        let shownSections = snapshot.sections.map(\.id)
        if Set(shownSections).count != shownSections.count { return "a section is shown twice" }
        if Set(shownSections) != expectedSections { return "sections shown \(shownSections), expected \(expectedSections.sorted())" }
        var shownItems = Set<ItemID>()
        for section in snapshot.sections {
            if section.value != sections[section.id]?.data { return "\(section.id) shows a stale value" }
            if let why = checkFields(section.fields, of: section.id.opID) { return "\(section.id): \(why)" }
            for item in section.items {
                if !shownItems.insert(item.id).inserted { return "\(item.id) is shown twice" }
                guard let r = liveItems[item.id] else { return "\(item.id) is shown but should be deleted" }
                if r.section != section.id { return "\(item.id) is in \(section.id), its winning move put it in \(r.section!)" }
                if item.value != r.data { return "\(item.id) shows a stale value" }
                if let why = checkFields(item.fields, of: item.id.opID) { return "\(item.id): \(why)" }
            }
        }
        if shownItems.count != liveItems.count {
            return "\(liveItems.count - shownItems.count) live items are lost: \(Set(liveItems.keys).subtracting(shownItems).sorted())"
        }
        return nil
    }

    /// The fields the writes imply for `entity`, computed from the whole set of writes at once
    /// (not write by write, as the engine does): a value field is its greatest set or remove; the
    /// kind shown is that of the greatest write; an increment or add counts unless a reset of the
    /// field (or a delete of that member) names it as seen.
    public func expectedFields(of entity: OpID) -> [String: Field] {
        var out: [String: Field] = [:]
        for (name, list) in fieldWrites[entity] ?? [:] {
            func greater(_ a: (clock: UInt64, id: OpID, write: FieldWrite), _ b: (clock: UInt64, id: OpID, write: FieldWrite)) -> Bool {
                a.clock != b.clock ? a.clock > b.clock : a.id > b.id
            }
            guard let latest = list.max(by: { greater($1, $0) }) else { continue }
            func covered(_ tag: OpID, by writes: [(clock: UInt64, id: OpID, write: FieldWrite)]) -> Bool {
                writes.contains { w in w.write.seen.contains { $0.replica == tag.replica && $0.counter >= tag.counter } }
            }
            let resets = list.filter { if case .set = $0.write.change { true } else if case .remove = $0.write.change { true } else { false } }
            switch latest.write.change {
            case .set(let v): out[name] = .value(v.normalizedForOracle)
            case .remove: break
            case .increment:
                var sum: Int64 = 0
                for w in list { if case .increment(let n) = w.write.change, !covered(w.id, by: resets) { sum &+= n } }
                out[name] = .counter(sum)
            case .insert, .delete:
                var members = Set<String>()
                for w in list {
                    guard case .insert(let added) = w.write.change else { continue }
                    for m in added {
                        let deletes = list.filter { if case .delete(let d) = $0.write.change { d.contains(m) } else { false } }
                        if !covered(w.id, by: resets) && !covered(w.id, by: deletes) { members.insert(m) }
                    }
                }
                out[name] = .set(members.sorted())
            case .splice, .text:
                continue   // text: checked on its own (no interleaving, nothing lost), not by this model
            }
        }
        return out
    }

    private func checkFields(_ shown: [String: Field], of entity: OpID) -> String? {
        let expected = expectedFields(of: entity)
        let shown = shown.filter { if case .text = $0.value { false } else { true } }
        return shown == expected ? nil : "fields \(shown) where the writes imply \(expected)"
    }
}

extension FieldValue {
    /// A date to the millisecond, as the engine keeps it.
    var normalizedForOracle: FieldValue {
        if case .date(let d) = self {
            return .date(Date(timeIntervalSince1970: Double(Int64((d.timeIntervalSince1970 * 1000).rounded())) / 1000))
        }
        return self
    }
}
