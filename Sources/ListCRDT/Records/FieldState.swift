import Foundation

/// The order of field writes: a write's hybrid logical clock, then its operation id (unique), so
/// every replica orders any two writes the same way (Docs/Semantics.md §8.2).
struct FieldStamp: Hashable, Comparable, Sendable {
    var clock: UInt64
    var id: OpID

    static let zero = FieldStamp(clock: 0, id: .none)

    static func < (a: FieldStamp, b: FieldStamp) -> Bool {
        a.clock != b.clock ? a.clock < b.clock : a.id < b.id
    }
}

/// One field of one record: every register the field's kinds need, merged write by write.
///
/// - the kind shown is that of the greatest write of any kind (`latest`);
/// - a value field is the greatest `set` or `remove` (`register`, `value`; nil after a remove);
/// - a counter is the sum of the live increments, each tagged with its operation's id;
/// - a set's members are the strings with a live add tag.
///
/// A `set`, a `remove` or a set `delete` kills the increments and adds its author had seen
/// (``FieldWrite/seen``). Causal delivery applies every such tag before the write that names it,
/// so killing them as the write applies is exact: nothing killed can arrive later, and no reset
/// needs keeping. The state is a function of the set of writes applied, whatever their order.
struct FieldState: Hashable, Sendable {
    enum Kind: UInt8, Sendable { case removed = 0, value, counter, set, text }

    /// The greatest write of any kind, and its kind: what the field shows.
    var latest = FieldStamp.zero
    var kind = Kind.removed
    /// The greatest `set` or `remove`, and its value (nil: removed).
    var register = FieldStamp.zero
    var value: FieldValue?
    /// Live increments, by the id of the operation that made each.
    var increments: [OpID: Int64] = [:]
    /// Live adds of each member, by the ids of the operations that made them.
    var adds: [String: [OpID]] = [:]
    /// The characters of a text field (`Text/TextSequence.swift`), nil if never spliced.
    var text: TextSequence?

    /// What the field shows, or nil when it is removed (or was never written).
    var shown: Field? {
        switch kind {
        case .removed: return nil
        case .value: return value.map { .value($0) }
        case .counter: return .counter(counterSum)
        case .set: return .set(adds.keys.sorted())
        case .text: return .text(text?.string ?? "")
        }
    }

    /// The sum of the live increments (wrapping: a counter never traps).
    var counterSum: Int64 { increments.values.reduce(0, &+) }

    /// Applies one write stamped `stamp` (its operation's clock and id). Returns the value (or
    /// removal) it replaced, and that write's id, when it beat a register write of `local`'s that
    /// its author had not seen (a conflict to report), else nil.
    mutating func apply(_ write: FieldWrite, stamp: FieldStamp, local: ReplicaID) -> (lost: FieldValue?, by: OpID)? {
        let kindOfWrite: Kind
        var conflict: (lost: FieldValue?, by: OpID)?
        switch write.change {
        case .set(let v):
            kindOfWrite = .value
            conflict = writeRegister(v.normalized, write: write, stamp: stamp, local: local)
            reset(write.seen)
        case .remove:
            kindOfWrite = .removed
            conflict = writeRegister(nil, write: write, stamp: stamp, local: local)
            reset(write.seen)
        case .increment(let n):
            kindOfWrite = .counter
            increments[stamp.id, default: 0] &+= n
        case .insert(let members):
            kindOfWrite = .set
            for m in members where !(adds[m]?.contains(stamp.id) ?? false) { adds[m, default: []].append(stamp.id) }
        case .delete(let members):
            kindOfWrite = .set
            for m in members { resetMember(m, write.seen) }
        case .text(let edit):
            kindOfWrite = .text
            reset(write.seen)   // a splice onto a field that showed no text resets what its author saw
            if text == nil { text = TextSequence() }
            text!.apply(edit, id: stamp.id)
        case .splice:
            preconditionFailure("a positional splice is resolved before it applies")
        }
        if stamp > latest {
            latest = stamp
            kind = kindOfWrite
        }
        return conflict
    }

    private mutating func writeRegister(_ v: FieldValue?, write: FieldWrite, stamp: FieldStamp,
                                        local: ReplicaID) -> (lost: FieldValue?, by: OpID)? {
        guard stamp > register else { return nil }
        let old = register, oldValue = value
        register = stamp
        value = v
        // Mine lost to a write whose author had not seen it (one that had would name it).
        if old.id != .none, old.id.replica == local, stamp.id.replica != local, write.replaces != old.id {
            return (oldValue, old.id)
        }
        return nil
    }

    /// Kills the increments and adds that `seen` covers.
    private mutating func reset(_ seen: [OpID]) {
        guard !seen.isEmpty else { return }
        let covers = Self.coverage(seen)
        if !increments.isEmpty { increments = increments.filter { !covers($0.key) } }
        for m in Array(adds.keys) { resetMember(m, covers) }
        text?.reset(covers)
    }

    private mutating func resetMember(_ m: String, _ seen: [OpID]) {
        resetMember(m, Self.coverage(seen))
    }

    private mutating func resetMember(_ m: String, _ covers: (OpID) -> Bool) {
        guard let tags = adds[m] else { return }
        let live = tags.filter { !covers($0) }
        adds[m] = live.isEmpty ? nil : live
    }

    /// Whether a tag is covered by `seen` (its counter is at most the one `seen` names for its
    /// replica).
    static func coverage(_ seen: [OpID]) -> (OpID) -> Bool {
        var top: [ReplicaID: UInt64] = [:]
        for s in seen { top[s.replica] = max(top[s.replica] ?? 0, s.counter) }
        return { tag in (top[tag.replica] ?? 0) >= tag.counter }
    }

    /// What a local `set` or `remove` must say it saw: per replica, the greatest live tag.
    var seenForReset: [OpID] {
        var top: [ReplicaID: UInt64] = [:]
        for t in increments.keys { top[t.replica] = max(top[t.replica] ?? 0, t.counter) }
        for tags in adds.values { for t in tags { top[t.replica] = max(top[t.replica] ?? 0, t.counter) } }
        text?.liveTops(into: &top)
        return Self.sorted(top)
    }

    /// What a local set `delete` of `members` must say it saw.
    func seenForDelete(_ members: [String]) -> [OpID] {
        var top: [ReplicaID: UInt64] = [:]
        for m in members { for t in adds[m] ?? [] { top[t.replica] = max(top[t.replica] ?? 0, t.counter) } }
        return Self.sorted(top)
    }

    private static func sorted(_ top: [ReplicaID: UInt64]) -> [OpID] {
        top.map { OpID(counter: $0.value, replica: $0.key) }.sorted { $0.replica.rawValue < $1.replica.rawValue }
    }

    /// The same state with its history folded, for compaction (every write is causally stable, so
    /// every later reset has seen every tag): one increment per replica, one add tag per member
    /// and replica.
    var folded: FieldState {
        var f = self
        var sums: [ReplicaID: (UInt64, Int64)] = [:]
        for (t, n) in increments {
            let s = sums[t.replica] ?? (0, 0)
            sums[t.replica] = (max(s.0, t.counter), s.1 &+ n)
        }
        f.increments = Dictionary(uniqueKeysWithValues: sums.map { (OpID(counter: $0.value.0, replica: $0.key), $0.value.1) })
        for (m, tags) in adds {
            var top: [ReplicaID: UInt64] = [:]
            for t in tags { top[t.replica] = max(top[t.replica] ?? 0, t.counter) }
            f.adds[m] = Self.sorted(top)
        }
        // Hidden characters behind a value or a removal are reset by whoever types next (they
        // have seen them all): only a text field keeps its text.
        f.text = kind == .text ? text?.compacted() : nil
        return f
    }
}

extension FieldState {
    /// Equal when every register is: a member's add tags compare as a set (replicas apply them in
    /// different orders, and a snapshot writes them sorted).
    ///
    /// - Complexity: O(f + t) for f registers and t tags.
    static func == (a: FieldState, b: FieldState) -> Bool {
        guard a.latest == b.latest, a.kind == b.kind, a.register == b.register, a.value == b.value,
              a.increments == b.increments, a.adds.count == b.adds.count, a.text == b.text else { return false }
        return a.adds.allSatisfy { member, tags in
            guard let other = b.adds[member], other.count == tags.count else { return false }
            return Set(other) == Set(tags)
        }
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(latest)
        hasher.combine(kind)
        hasher.combine(register)
        hasher.combine(value)
        hasher.combine(increments)
        hasher.combine(Set(adds.keys))
        hasher.combine(text)
    }
}
