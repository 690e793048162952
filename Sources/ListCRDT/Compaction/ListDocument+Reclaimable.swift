import Foundation

// What compaction would free, counted as the document changes (issue 48: a policy that follows
// what is dead; Docs/Semantics.md §7, "Reclaimable bytes"). A daemon asks after every batch, so
// the count is kept up to date by each applied operation in O(1) (a field write measures each
// field it writes in place; a delete of an item with a record, O(f) for its f fields), never found
// by scanning the document; it is counted
// afresh only where the document is rebuilt anyway (a compaction, a snapshot's load).
//
// The bytes, as counted here (every part also in ``ListDocument/documentBytes``):
// - the log, all of which compaction drops: ``ListDocument/loggedOperationBytes`` per operation,
//   plus what the operations kept whole in it carry (value writes' values, field writes' names
//   and values: every overwritten value and every removal is there);
// - a dead item's current value and its record (compaction keeps neither);
// - in the records of the others, a field that shows nothing and counts nothing (removed), and
//   the characters of a text field that no longer show (``ListDocument/textCharacterBytes`` each).
// Dead sections keep their values (compaction keeps every section, §7), so they count for nothing.

/// The byte counts ``ListDocument`` keeps besides its tables (``ListDocument/reclaimableBytes``).
struct ByteAccount: Sendable, Equatable {
    /// Dead items' values and records, removed fields and hidden text characters of the others.
    var dead = 0
    /// Every record's bytes (``FieldState/accountedBytes(name:)``, `held`).
    var records = 0

    /// Counts one record's `fields`: all of it held, and dead whole when its entity is `dead`,
    /// else only what a compaction drops of it alive.
    ///
    /// - Complexity: O(f) for f fields.
    mutating func add(_ fields: [String: FieldState], dead: Bool) {
        let bytes = RecordStore.accountedBytes(fields)
        records += bytes.held
        self.dead += dead ? bytes.held : bytes.reclaimable
    }
}

extension ListDocument {
    /// What one logged operation counts for, besides what it carries (``loggedPayloadBytes``):
    /// the 16 bytes of its id.
    public static let loggedOperationBytes = 16
    /// What one character of a text field counts for: a Unicode scalar's 4 bytes.
    public static let textCharacterBytes = 4

    /// The bytes compaction would free now: the whole log (``loggedOperationBytes`` per operation
    /// plus the values and fields of the operations it keeps whole), the values and records of dead
    /// items, removed fields, and text characters that no longer show (Docs/Semantics.md §7,
    /// "Reclaimable bytes"). Zero right after ``compact(stable:)``, but for the hidden text
    /// characters it keeps as anchors.
    ///
    /// - Complexity: O(1): kept up to date as operations apply (the first call after a state
    ///   snapshot's load replays the records it deferred, DeferredRecords.swift).
    public var reclaimableBytes: Int { logBytes + byteAccount.dead + records.deferredAccount.dead }

    /// The bytes of the document as ``reclaimableBytes`` counts them: every current value of a
    /// section or item, every record, and the log. The part that is not reclaimable is what a
    /// compaction keeps.
    ///
    /// - Complexity: O(1), as ``reclaimableBytes``.
    public var documentBytes: Int {
        items.valueBytes + sections.valueBytes + byteAccount.records + records.deferredAccount.records + logBytes
    }

    /// The log's part of ``reclaimableBytes``.
    var logBytes: Int { log.count * Self.loggedOperationBytes + log.keptWholeBytes }

    // MARK: Keeping the count

    /// What item `i` counts for once dead, besides the reclaimable part of its record it counted
    /// for alive: its value and the rest of its record.
    ///
    /// - Complexity: O(f) for the f fields of its record.
    @inline(__always)
    func deathBytes(ofItem i: EntityIndex) -> Int {
        Self.deathBytes(ofItem: i, id: items.rows[i.int].id, values: items.insertValues, replaced: items.replaced, records: records)
    }

    /// ``deathBytes(ofItem:)`` from the document's parts (for a loop that holds the item rows).
    @inline(__always)
    static func deathBytes(ofItem i: EntityIndex, id: OpID, values: ValueStore, replaced: [EntityIndex: EntityTable.Replaced],
                           records: RecordStore) -> Int {
        let value = EntityTable.valueLength(i, values: values, replaced: replaced)
        guard !records.isEmpty, let fields = records[id] else { return value }
        // (A deferred record counts as of the load in ``RecordStore/deferredAccount``; what it
        // counts for now, read here, is the change a death or a revival makes to that.)
        let record = RecordStore.accountedBytes(fields)
        return value + record.held - record.reclaimable
    }

    /// Item `i` went from alive to dead (`died`) or back.
    @inline(__always)
    mutating func noteItem(_ i: EntityIndex, died: Bool) {
        let bytes = deathBytes(ofItem: i)
        byteAccount.dead += died ? bytes : -bytes
    }

    /// Applies `writes`, made by operation `id`, to `target`'s record, and counts what they
    /// changed (``RecordStore/apply(_:of:to:local:)`` measures each field it writes in place).
    /// `alive`: whether the target is a live item or a section (found when the operation was
    /// resolved): a dead item's record is reclaimable whole.
    ///
    /// - Complexity: that of ``RecordStore/apply(_:of:to:local:)``.
    @inline(__always)
    mutating func applyCounting(_ writes: FieldWrites, of id: OpID, to target: RecordTarget, alive: Bool) {
        let delta = records.apply(writes, of: id, to: target, local: replica)
        byteAccount.records += delta.held
        byteAccount.dead += alive ? delta.reclaimable : delta.held
    }

    /// Counts ``byteAccount`` afresh from the tables (a document rebuilt by a compaction or a
    /// snapshot's load, whose tables were not made operation by operation). Records a load
    /// deferred are left to ``RecordStore/deferredAccount`` (none is taken yet then).
    ///
    /// - Complexity: O(e + f) for e entities and f fields not deferred.
    mutating func recountBytes() {
        precondition(records.taken.isEmpty, "recounted after deferred records were taken")
        byteAccount = countedBytes(includingDeferred: false)
    }

    /// ``byteAccount`` as the tables give it, found the slow way: every item and record looked at.
    ///
    /// - Complexity: O(e + f + r log n) for e entities, f fields and r records.
    /// `includingDeferred` false: the records not deferred only.
    func countedBytes(includingDeferred: Bool = true) -> ByteAccount {
        var account = ByteAccount()
        for i in items.indices where !items.isAlive(i) { account.dead += items.valueLength(i) }
        func count(_ id: OpID, _ fields: [String: FieldState]) {
            // A section's id names no item: its record counts as a live one's.
            account.add(fields, dead: itemEntity(ItemID(id)).map { !items.isAlive($0) } ?? false)
        }
        if includingDeferred {
            records.forEachRecord(count)
        } else {
            for (id, fields) in records.materialized { count(id, fields) }
        }
        return account
    }

    /// ``reclaimableBytes`` and ``documentBytes`` found the slow way, from nothing but the tables
    /// and the log's operations (tests compare it with the running count).
    ///
    /// - Complexity: O(e + f + m) for e entities, f fields and m logged operations.
    @_spi(Testing) public var referenceBytes: (reclaimable: Int, document: Int) {
        let account = countedBytes()
        var values = 0
        for i in items.indices { values += items.value(i).count }
        for s in sections.indices { values += sections.value(s).count }
        let log = operations(fromValid: 0).reduce(0) { $0 + Self.loggedOperationBytes + $1.loggedPayloadBytes }
        return (log + account.dead, values + account.records + log)
    }
}

extension ListOperation {
    /// The bytes an operation the log keeps whole carries there: a value write's value, a field
    /// write's names and values (``FieldWrites/footprint``); nothing for the others (an insert's
    /// value is in the state, a section delete carries ids).
    var loggedPayloadBytes: Int {
        switch kind {
        case let .setItemValue(_, value), let .setSectionValue(_, value): value.count
        case let .writeFields(_, writes), let .insertItemWithFields(_, _, _, writes),
             let .insertSectionWithFields(_, _, writes): writes.footprint
        default: 0
        }
    }
}

extension RecordStore {
    /// What a record's fields count for, in all and what a compaction would drop of them alive.
    ///
    /// - Complexity: O(f) for f fields.
    static func accountedBytes(_ fields: [String: FieldState]) -> (held: Int, reclaimable: Int) {
        var total = (held: 0, reclaimable: 0)
        for (name, f) in fields {
            let bytes = f.accountedBytes(name: name)
            total.held += bytes.held
            total.reclaimable += bytes.reclaimable
        }
        return total
    }
}

extension FieldState {
    /// ``apply(_:stamp:local:)``, adding to `delta` what the field counts for after less before
    /// (``accountedBytes(name:)``; a field never written counted for nothing).
    ///
    /// - Complexity: that of ``apply(_:stamp:local:)``, plus O(m) for m set members.
    @inline(__always)
    mutating func applyMeasuring(_ write: FieldWrite, stamp: FieldStamp, local: ReplicaID,
                                 delta: inout (held: Int, reclaimable: Int)) -> (lost: FieldValue?, by: OpID)? {
        let before = latest == .zero ? (held: 0, reclaimable: 0) : accountedBytes(name: write.name)
        let beaten = apply(write, stamp: stamp, local: local)
        let after = accountedBytes(name: write.name)
        delta.held += after.held - before.held
        delta.reclaimable += after.reclaimable - before.reclaimable
        return beaten
    }

    /// What the field counts for: its name, its value, 8 bytes for a counter, its members' names
    /// and its text's characters (every one kept, hidden ones too); and the part a compaction
    /// drops while its entity lives: all of it for a removed field that counts and adds nothing
    /// (``RecordStore/compacted(keeping:)`` drops it), else the characters that do not show.
    ///
    /// - Complexity: O(m) for m set members.
    func accountedBytes(name: String) -> (held: Int, reclaimable: Int) {
        let characters = text?.slotCount ?? 0
        var held = name.utf8.count + (value?.size ?? 0) + characters * ListDocument.textCharacterBytes
        if !increments.isEmpty { held += 8 }
        for member in adds.keys { held += member.utf8.count }
        if kind == .removed && increments.isEmpty && adds.isEmpty { return (held, held) }
        let shown = kind == .text ? (text?.count ?? 0) : 0
        return (held, (characters - shown) * ListDocument.textCharacterBytes)
    }
}
