import Foundation

/// Where the hybrid logical clock of field writes reads the time (Docs/Semantics.md §8.2). The
/// engine reads no clock of its own: a document without one orders field writes by the logical
/// part alone (each write beats what its author saw; concurrent ones by operation id).
public struct WallClock: Sendable {
    /// Milliseconds since 1970, UTC.
    public let millisecondsSince1970: @Sendable () -> UInt64

    /// A clock reading `now`.
    public init(_ now: @escaping @Sendable () -> UInt64) { millisecondsSince1970 = now }

    /// The system's clock (`Date()`).
    public static let system = WallClock { UInt64(max(0, (Date().timeIntervalSince1970 * 1000).rounded())) }

    /// A clock that always reads `ms` (tests).
    public static func fixed(_ ms: UInt64) -> WallClock { WallClock { ms } }
}

extension ListDocument {
    // MARK: Reading

    /// The fields an item shows (removed fields left out), or an empty record if it has none.
    ///
    /// - Complexity: O(f + t) for f fields and t their counters' increments and sets' members.
    public func fields(of item: ItemID) -> [String: Field] { records.record(of: item.opID) }

    /// The fields a section shows.
    ///
    /// - Complexity: O(f + t), as ``fields(of:)-(ItemID)``.
    public func fields(of section: SectionID) -> [String: Field] { records.record(of: section.opID) }

    /// One field of an item, or nil if it has none of that name (or it was removed).
    public func field(_ name: String, of item: ItemID) -> Field? {
        records[item.opID]?[name]?.shown
    }

    /// One field of a section, or nil.
    public func field(_ name: String, of section: SectionID) -> Field? {
        records[section.opID]?[name]?.shown
    }

    /// One field of an item's or a section's record, or nil.
    public func field(_ name: String, of target: RecordTarget) -> Field? {
        records[target.opID]?[name]?.shown
    }

    /// Whether applying a field write that beats one of this replica's own records a
    /// ``FieldConflict`` (on by default). Turn it off while replaying stored history (a store's
    /// log at open), so that old conflicts are not reported as news; loading a snapshot never
    /// reports them.
    public var reportsFieldConflicts: Bool {
        get { records.reportsConflicts }
        set { records.reportsConflicts = newValue }
    }

    /// The greatest field-write clock this document has applied.
    public var fieldClock: UInt64 { records.clock }

    /// The field writes of this replica that lost to a concurrent write of another since the last
    /// call (Docs/Semantics.md §8.3), oldest first; taking them empties the list. At most 1,024
    /// wait; older ones are dropped.
    public mutating func takeFieldConflicts() -> [FieldConflict] {
        defer { records.conflicts = [] }
        return records.conflicts
    }

    // MARK: Writing

    /// Writes fields of a live item, in one operation: each named field changes, every other
    /// field is untouched (Docs/Semantics.md §8.1).
    ///
    /// - Throws: ``ListError/unknownItem(_:)`` or ``ListError/itemDeleted(_:)``;
    ///   ``ListError/invalidField(_:_:)`` for a bad name, a value over ``maxValueSize``, a
    ///   non-finite double, no change at all, or a limit of ``FieldLimits``. Nothing changes then.
    /// - Complexity: O(w log w + t) for w fields and t their live tags.
    @discardableResult
    public mutating func writeFields(_ changes: [String: FieldChange], ofItem id: ItemID) throws(ListError) -> ListOperation {
        guard let i = itemEntity(id) else { throw .unknownItem(id) }
        guard items.isAlive(i) else { throw .itemDeleted(id) }
        return try writeFields(changes, to: .item(id))
    }

    /// Writes fields of a visible section, in one operation (see ``writeFields(_:ofItem:)``).
    @discardableResult
    public mutating func writeFields(_ changes: [String: FieldChange], ofSection id: SectionID) throws(ListError) -> ListOperation {
        guard let s = sectionEntity(id) else { throw .unknownSection(id) }
        guard isSectionVisible(s) else { throw .sectionDeleted(id) }
        return try writeFields(changes, to: .section(id))
    }

    /// Writes fields of a live item or a visible section: ``writeFields(_:ofItem:)`` or
    /// ``writeFields(_:ofSection:)``, as `target` names.
    @discardableResult
    public mutating func writeFields(_ changes: [String: FieldChange], of target: RecordTarget) throws(ListError) -> ListOperation {
        switch target {
        case .item(let id): try writeFields(changes, ofItem: id)
        case .section(let id): try writeFields(changes, ofSection: id)
        }
    }

    /// Inserts a new item at `indexPath` with its first fields, in one operation (Docs/Semantics.md
    /// §8.1): ``insertItem(at:value:)`` that also writes `fields` (sets, increments and set adds;
    /// a new record has nothing to remove). With no fields it is a plain insert.
    ///
    /// - Throws: what ``insertItem(at:value:)`` throws, or ``ListError/invalidField(_:_:)``.
    ///   Nothing changes then.
    /// - Complexity: O(log n + w log w) for w fields.
    @discardableResult
    public mutating func insertItem(at indexPath: IndexPath, value: Data = Data(),
                                    fields: [String: FieldChange]) throws(ListError) -> ListOperation {
        if fields.isEmpty { return try insertItem(at: indexPath, value: value) }
        guard indexPath.count == 2 else { throw .indexPathOutOfRange(indexPath, count: 0) }
        let writes = try insertWrites(fields, value: value, of: "item")
        let (section, row) = (indexPath[0], indexPath[1])
        let s = try sectionOfRow(section, row)
        let count = visibleItemCount(s)
        guard row >= 0, row <= count else { throw .indexPathOutOfRange(IndexPath(item: row, section: section), count: count) }
        let (left, right, after) = forest.localInsertion(tree(ofSequence: .items(s)), at: row, legacy: variant == .legacyOrigins)
        return try make(.insertItemWithFields(section: SectionID(sections.rows[s.int].id), origins(left, right),
                                              value: value, fields: writes),
                        .insertItemWithFields(section: s, left: left, right: right, value: value, fields: writes),
                        hint: .after(after))
    }

    /// Inserts a new section at `index` (`0...sectionCount`) with its first fields, in one
    /// operation (Docs/Semantics.md §8.1; wire format 5, Docs/WireFormat.md §2.7):
    /// ``insertSection(at:value:)`` that also writes `fields` (sets, increments and set adds).
    /// With no fields it is a plain insert, which every older peer reads.
    ///
    /// - Throws: what ``insertSection(at:value:)`` throws, or ``ListError/invalidField(_:_:)``.
    ///   Nothing changes then.
    /// - Complexity: O(log s + w log w) for s sections and w fields.
    @discardableResult
    public mutating func insertSection(at index: Int, value: Data = Data(),
                                       fields: [String: FieldChange]) throws(ListError) -> ListOperation {
        if fields.isEmpty { return try insertSection(at: index, value: value) }
        let writes = try insertWrites(fields, value: value, of: "section")
        guard index >= 0, index <= sectionCount else { throw .sectionIndexOutOfRange(index, count: sectionCount) }
        let (left, right, after) = forest.localInsertion(Self.sectionTree, at: index, legacy: variant == .legacyOrigins)
        return try make(.insertSectionWithFields(origins(left, right), value: value, fields: writes),
                        .insertSectionWithFields(left: left, right: right, value: value, fields: writes),
                        hint: .after(after))
    }

    /// The first fields that make a new record show `shown` (``insertItem(at:value:fields:)``,
    /// ``insertSection(at:value:fields:)``): values set, counters incremented by their count,
    /// sets' members added; and the texts, which a new record's insert cannot carry, to type by
    /// splices after it.
    ///
    /// - Complexity: O(f + m) for f fields and m set members.
    public static func insertChanges(showing shown: [String: Field]) -> (fields: [String: FieldChange], texts: [String: String]) {
        var fields: [String: FieldChange] = [:], texts: [String: String] = [:]
        for (name, f) in shown {
            switch f {
            case .value(let v): fields[name] = .set(v)
            case .counter(let n): fields[name] = .increment(n)
            case .set(let m): if !m.isEmpty { fields[name] = .insert(m) }
            case .text(let t): if !t.isEmpty { texts[name] = t }
            }
        }
        return (fields, texts)
    }

    /// The first field writes of a new item or section (`entity` names it in errors), checked:
    /// sets, increments and set adds only, within the limits, and a value within ``maxValueSize``.
    private func insertWrites(_ fields: [String: FieldChange], value: Data, of entity: String) throws(ListError) -> FieldWrites {
        if value.count > maxValueSize { throw .valueTooLarge(size: value.count, limit: maxValueSize) }
        var list: [FieldWrite] = []
        for (name, change) in fields {
            switch change {
            case .set, .increment, .insert: list.append(FieldWrite(name: name, change: change))
            case .remove, .delete: throw .invalidField(name, "a new \(entity) has nothing to remove: set, increment or add")
            case .splice, .text: throw .invalidField(name, "a new \(entity)'s text is typed by a splice after the insert")
            }
        }
        let writes = FieldWrites(clock: nextFieldClock(), writes: list)
        if let problem = Self.problem(with: writes, maxValueSize: maxValueSize) {
            throw .invalidField(problem.name, problem.why)
        }
        return writes
    }

    /// Sets one value field of a live item.
    @discardableResult
    public mutating func setField(_ name: String, to value: FieldValue, ofItem id: ItemID) throws(ListError) -> ListOperation {
        try writeFields([name: .set(value)], ofItem: id)
    }

    /// Adds `amount` to a counter field of a live item.
    @discardableResult
    public mutating func increment(_ name: String, by amount: Int64 = 1, ofItem id: ItemID) throws(ListError) -> ListOperation {
        try writeFields([name: .increment(amount)], ofItem: id)
    }

    /// Removes a field of a live item.
    @discardableResult
    public mutating func removeField(_ name: String, ofItem id: ItemID) throws(ListError) -> ListOperation {
        try writeFields([name: .remove], ofItem: id)
    }

    private mutating func writeFields(_ changes: [String: FieldChange], to target: RecordTarget) throws(ListError) -> ListOperation {
        var list: [FieldWrite] = []
        list.reserveCapacity(changes.count)
        for (name, change) in changes {
            if let w = try textWrite(name, change, of: target) { list.append(w); continue }  // Text/ListDocument+Text.swift
            // Not a copy of the record held across the loop: a text field's storage must stay
            // uniquely referenced, or the commit copies it whole (O(n) per keystroke).
            let state = records[target.opID]?[name]
            let seen: [OpID]
            switch change {
            case .set, .remove: seen = state?.seenForReset ?? []
            case .delete(let members): seen = state?.seenForDelete(members) ?? []
            case .increment, .insert, .splice, .text: seen = []
            }
            list.append(FieldWrite(name: name, change: change, replaces: state?.register.id ?? .none, seen: seen))
        }
        let writes = FieldWrites(clock: nextFieldClock(), writes: list)
        if let problem = Self.problem(with: writes, maxValueSize: maxValueSize) {
            throw .invalidField(problem.name, problem.why)
        }
        return try make(.writeFields(target, writes), .writeFields(target, writes, alive: true))   // a visible target
    }

    /// The clock of the next local field write: past every clock applied here, and at least the
    /// wall clock when the document has one.
    func nextFieldClock() -> UInt64 {
        let wall = (wallClock?.millisecondsSince1970() ?? 0)
        let physical = wall >= (1 << 48) ? UInt64.max - (1 << 20) : wall << 16
        let logical = records.clock >= UInt64.max - (1 << 20) ? records.clock : records.clock + 1
        return max(physical, logical)
    }

    // MARK: Validation

    /// What is wrong with `writes`, if anything: the field it concerns and why. Checked for local
    /// edits and for every received operation alike.
    ///
    /// `namesChecked`: every name is within ``FieldLimits`` and the writes are in strictly
    /// increasing name order, as the batch decoder guarantees for what it decodes
    /// (`BatchDecoder.fieldName()`, `fieldWrites(_:)`); a state snapshot's load, which checks every
    /// field write of the history, skips those checks then.
    ///
    /// - Complexity: O(w + m + s) for w writes, m members and s seen entries.
    static func problem(with writes: FieldWrites, maxValueSize: Int, namesChecked: Bool = false) -> (name: String, why: String)? {
        if writes.writes.isEmpty { return ("", "an operation writes no field") }
        if writes.writes.count > FieldLimits.maxWrites {
            return ("", "\(writes.writes.count) fields in one operation, over \(FieldLimits.maxWrites)")
        }
        // Over the writes in place (a `for w in` loop copied each write: a third of this check's
        // cost in a state snapshot's load, which checks every field write of the history).
        let found = writes.writes.withUnsafeBufferPointer { ws -> (name: String, why: String)? in
            for k in ws.indices {
                if !namesChecked {
                    if let why = FieldLimits.problem(withName: ws[k].name) { return (ws[k].name, why) }
                    if k > 0, ws[k - 1].name >= ws[k].name { return (ws[k].name, "fields not in increasing name order, or twice") }
                }
                if let why = Self.problem(withChange: ws[k], maxValueSize: maxValueSize) { return (ws[k].name, why) }
            }
            return nil
        }
        if let found { return found }
        return textProblem(with: writes, maxValueSize: maxValueSize)
    }

    /// What is wrong with one write's seen list or change (the name aside), if anything.
    @inline(__always)
    private static func problem(withChange w: borrowing FieldWrite, maxValueSize: Int) -> String? {
        if w.seen.count > FieldLimits.maxSeen { return "names \(w.seen.count) replicas seen, over \(FieldLimits.maxSeen)" }
        for k in w.seen.indices.dropFirst() where w.seen[k - 1].replica.rawValue >= w.seen[k].replica.rawValue {
            return "seen replicas not in increasing order"
        }
        switch w.change {
        case .set(let v):
            if v.size > maxValueSize { return "value of \(v.size) bytes is over the limit of \(maxValueSize) bytes" }
            if case .double(let d) = v, !d.isFinite { return "a double must be finite" }
            if case .date(let d) = v, !(d.timeIntervalSince1970 * 1000).isFinite || abs(d.timeIntervalSince1970) > 9e12 {
                return "a date out of range"
            }
        case .insert(let members), .delete(let members):
            if members.isEmpty { return "a set change names no member" }
            if members.count > FieldLimits.maxMembers { return "\(members.count) members in one write, over \(FieldLimits.maxMembers)" }
            if members.count > 1, Set(members).count != members.count { return "a member twice in one write" }
            for m in members where m.utf8.count > FieldLimits.maxMemberBytes {
                return "a member of \(m.utf8.count) bytes, over \(FieldLimits.maxMemberBytes)"
            }
        case .remove, .increment, .splice, .text:
            break
        }
        return nil
    }
}
