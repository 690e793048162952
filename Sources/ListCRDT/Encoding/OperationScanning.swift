import Foundation

/// Field writes checked without being built (issue 43): a state snapshot's load keeps the
/// history's field writes that hold no text as bytes (`History/LazyOperations.swift`). The batch
/// decoder reads each such record in full, refusing exactly what it refuses when it builds the
/// operation (``BatchDecoder/fieldWrites(_:)``, the same readers) and what
/// ``ListDocument/problem(with:maxValueSize:namesChecked:)`` refuses of a decoded write, but makes
/// no ``FieldWrite``, no array and no value: what the load needs of the operation (its id, target,
/// clock and the bytes it will count for) is kept in a ``DecodedBatch/LazyField``.
/// A record holding a text edit is decoded as before (its edits are checked against the text).

extension DecodedBatch {
    /// A field write kept as bytes: what the load checks it against, and where to decode it from.
    struct LazyField {
        /// What kind of record it is.
        enum Kind: UInt8 {
            /// ``ListOperation/Kind/writeFields(_:_:)`` of an item or a section.
            case writeItem, writeSection
            /// ``ListOperation/Kind/insertItemWithFields(section:_:value:fields:)``, and its section twin.
            case insertItem, insertSection
        }
        var id: OpID
        /// The record written (the entity's id; the operation's own for an insert).
        var target: OpID
        var kind: Kind
        /// The writes' clock (``FieldWrites/clock``) and their ``FieldWrites/footprint``.
        var clock: UInt64
        var footprint: Int
        /// Where its record starts, and the decoder's context there.
        var offset: Int
        var previousLast: OpID
        var lastSection: OpID
        var lastClock: UInt64
    }

    /// What decoding a ``LazyField`` later needs of the batch besides its bytes (version, replica
    /// and field name tables), once the whole batch is read.
    struct LazyTables {
        var version: UInt8
        var replicas: [ReplicaID]
        var names: [String]
        var maxValueSize: Int
    }
}

extension BatchDecoder {
    /// Reads the rest of a record of `kind` (``RecordKind/writeFields`` or
    /// ``RecordKind/insertItemWithFields``) whose header, read at `at`, gave `id`, checking it and
    /// keeping it as a ``DecodedBatch/LazyField``. Returns false, with the reader and the field
    /// name table back where they were, when it holds a text edit: it is decoded then.
    mutating func keepLazily(_ kind: RecordKind, variant: Bool, id: OpID, at: Int) throws(WireError) -> Bool {
        let bodyAt = reader.offset
        let before = (previousLast: context.previousLast, lastSection: context.lastSection, clock: fieldNames.lastClock,
                      names: fieldNames.names.count)
        let lazyKind: DecodedBatch.LazyField.Kind
        let target: OpID
        var section: SectionID?
        switch kind {
        case .writeFields:
            if variant {
                let s = try sectionRef(id)
                (lazyKind, target, section) = (.writeSection, s.opID, s)
            } else {
                (lazyKind, target) = (.writeItem, try ref(id, default: nil))
            }
            // The record the last text edit went to: most likely a text edit again (a text's
            // splices come one after another), decoded at once rather than scanned twice.
            if target == lastTextRecord {
                reader.rewind(to: bodyAt)
                return false
            }
        case .insertItemWithFields where variant:
            _ = try origins(id)
            _ = try reader.dataRange(limit: maxValueSize)
            (lazyKind, target, section) = (.insertSection, id, SectionID(id))
        case .insertItemWithFields:
            let s = try sectionRef(id)
            _ = try origins(id)
            _ = try reader.dataRange(limit: maxValueSize)
            (lazyKind, target, section) = (.insertItem, id, s)
        default:
            preconditionFailure("not a record of field writes")
        }
        guard let (clock, footprint) = try scanFieldWrites(id) else {
            lastTextRecord = target
            reader.rewind(to: bodyAt)
            fieldNames.lastClock = before.clock
            fieldNames.names.removeLast(fieldNames.names.count - before.names)
            return false
        }
        flushOperations()
        let k = runs.lazyFields.count
        if case .lazyFields(let r) = runs.parts.last, r.upperBound == k {
            runs.parts[runs.parts.count - 1] = .lazyFields(r.lowerBound ..< k + 1)
        } else {
            runs.parts.append(.lazyFields(k ..< k + 1))
        }
        runs.lazyFields.append(.init(id: id, target: target, kind: lazyKind, clock: clock, footprint: footprint, offset: at,
                                     previousLast: before.previousLast, lastSection: before.lastSection?.opID ?? .none,
                                     lastClock: before.clock))
        // What `append` of the operation would leave (no text: one id).
        context.previousLast = id
        if let section { context.lastSection = section }
        count += 1
        return true
    }

    /// ``fieldWrites(_:)`` of operation `id`, checked as it and ``ListDocument/problem(with:maxValueSize:namesChecked:)``
    /// check, building nothing: the writes' clock and ``FieldWrites/footprint``, or nil (the
    /// reader left anywhere) at the first text edit.
    mutating func scanFieldWrites(_ id: OpID) throws(WireError) -> (clock: UInt64, footprint: Int)? {
        let (clock, n, countAt) = try fieldWritesHead()
        guard n > 0 else { throw .invalidValue("field \"\": an operation writes no field", offset: countAt) }
        var footprint = 16
        var previousName: String?
        for _ in 0 ..< n {
            let name = try fieldName()
            if let previousName, !(previousName < name) {
                throw .invalidValue("field names not in increasing order, or twice", offset: countAt)
            }
            previousName = name
            _ = try ref(id, default: OpID.none)
            let seenAt = reader.offset
            let s = try reader.count(minBytes: 1)
            guard s <= FieldLimits.maxSeen else { throw .countTooLarge(s, offset: seenAt) }
            var last: ReplicaID?
            for _ in 0 ..< s {
                let seen = try ref(id, default: nil)
                if let last, last.rawValue >= seen.replica.rawValue {
                    throw .invalidValue("field \"\(name)\": seen replicas not in increasing order", offset: seenAt)
                }
                last = seen.replica
            }
            footprint += name.utf8.count + 24 + s * 16
            let at = reader.offset
            let tag = try reader.byte()
            switch FieldCode.Change(rawValue: tag) {
            case .set: footprint += try scanValue(name: name)
            case .remove: break
            case .increment: _ = try reader.signed()
            case .insert, .delete: footprint += try scanMembers(name: name)
            case .text: return nil
            case nil: throw .invalidTag(tag, offset: at)
            }
        }
        return (clock, footprint)
    }

    /// A field value as ``WireReader/fieldValue(maxValueSize:)`` reads it, checked as
    /// ``ListDocument/problem(with:maxValueSize:namesChecked:)`` checks it; its ``FieldValue/size``.
    private mutating func scanValue(name: String) throws(WireError) -> Int {
        let at = reader.offset
        let tag = try reader.byte()
        let size: Int
        switch FieldCode.Value(rawValue: tag) {
        case .null, .falseValue, .trueValue: size = 1
        case .int:
            _ = try reader.signed()
            size = 8
        case .double:
            guard Double(bitPattern: try reader.varint()).isFinite else { throw .invalidValue("a double that is not finite", offset: at) }
            size = 8
        case .string:
            let textAt = reader.offset
            let range = try reader.dataRange(limit: maxValueSize)
            if !reader.isASCII(range) { try StateRecords.checkUTF8(reader.bytes[range], at: textAt) }
            size = range.count
        case .date:
            let ms = try reader.signed()
            guard abs(ms) <= 9_000_000_000_000_000 else { throw .invalidValue("a date out of range", offset: at) }
            let d = Date(timeIntervalSince1970: Double(ms) / 1000)
            if !(d.timeIntervalSince1970 * 1000).isFinite || abs(d.timeIntervalSince1970) > 9e12 {
                throw .invalidValue("field \"\(name)\": a date out of range", offset: at)
            }
            size = 8
        case .bytes: size = try reader.dataRange(limit: maxValueSize).count
        case nil: throw .invalidTag(tag, offset: at)
        }
        guard size <= maxValueSize else {
            throw .invalidValue("field \"\(name)\": value of \(size) bytes is over the limit of \(maxValueSize) bytes", offset: at)
        }
        return size
    }

    /// A set change's members as ``WireReader/strings(maxCount:limit:)`` reads them, checked as
    /// ``ListDocument/problem(with:maxValueSize:namesChecked:)`` checks them (none, or one twice,
    /// is refused); what they count for in ``FieldWrites/footprint``.
    private mutating func scanMembers(name: String) throws(WireError) -> Int {
        let at = reader.offset
        let n = try reader.count(minBytes: 1)
        guard n <= FieldLimits.maxMembers else { throw .countTooLarge(n, offset: at) }
        guard n > 0 else { throw .invalidValue("field \"\(name)\": a set change names no member", offset: at) }
        let start = reader.offset
        var ascii = true
        var bytes = 0
        for _ in 0 ..< n {
            let memberAt = reader.offset
            let range = try reader.dataRange(limit: FieldLimits.maxMemberBytes)
            if !reader.isASCII(range) {
                ascii = false
                try StateRecords.checkUTF8(reader.bytes[range], at: memberAt)
            }
            bytes += range.count + 8
        }
        guard n > 1 else { return bytes }
        // Equal as strings: the same bytes when every member is ASCII (a member beyond it may
        // equal an ASCII one, as the Kelvin sign equals "K"); else as `Set` compares them. The
        // members are read again from `start` (checked: no array is made for them).
        var twice = false
        var walk = reader
        if ascii && n <= 32 {
            walk.rewind(to: start)
            for i in 0 ..< n {
                let a = try walk.dataRange(limit: FieldLimits.maxMemberBytes)
                var other = walk
                other.rewind(to: start)
                for _ in 0 ..< i where !twice {
                    let b = try other.dataRange(limit: FieldLimits.maxMemberBytes)
                    twice = reader.bytes[a] == reader.bytes[b]
                }
            }
        } else {
            walk.rewind(to: start)
            var members = Set<String>()
            for _ in 0 ..< n {
                let range = try walk.dataRange(limit: FieldLimits.maxMemberBytes)
                members.insert(String(decoding: reader.bytes[range], as: UTF8.self))
            }
            twice = members.count != n
        }
        if twice { throw .invalidValue("field \"\(name)\": a member twice in one write", offset: at) }
        return bytes
    }
}

extension WireReader {
    /// Whether the input's bytes at `range` are all ASCII, eight at a time.
    ///
    /// - Complexity: O(n) for n bytes.
    func isASCII(_ range: Range<Int>) -> Bool {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "a range out of the input")
        return bytes.withUnsafeBytes { all in
            var i = range.lowerBound
            let end = range.upperBound
            var high: UInt64 = 0
            while i + 8 <= end {
                high |= all.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                i += 8
            }
            while i < end {
                high |= UInt64(all[i])
                i += 1
            }
            return high & 0x8080_8080_8080_8080 == 0
        }
    }
}
