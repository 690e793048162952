import Foundation

/// The bytes of field values and changes (Docs/WireFormat.md §2.7), shared by the operation
/// batches (version 3) and the compacted snapshot's records (version 4).
enum FieldCode {
    /// A change's tag.
    enum Change: UInt8 { case set = 0, remove, increment, insert, delete, text }
    /// A value's type tag.
    enum Value: UInt8 { case null = 0, falseValue, trueValue, int, double, string, date, bytes }
}

extension WireWriter {
    /// A field value: its type tag, then its payload.
    mutating func fieldValue(_ v: FieldValue) {
        switch v {
        case .null: byte(FieldCode.Value.null.rawValue)
        case .bool(let b): byte((b ? FieldCode.Value.trueValue : .falseValue).rawValue)
        case .int(let i): byte(FieldCode.Value.int.rawValue); signed(i)
        case .double(let d): byte(FieldCode.Value.double.rawValue); varint(d.bitPattern)
        case .string(let s): byte(FieldCode.Value.string.rawValue); string(s)
        case .date(let d):
            byte(FieldCode.Value.date.rawValue)
            signed(Int64((d.timeIntervalSince1970 * 1000).rounded()))
        case .bytes(let d): byte(FieldCode.Value.bytes.rawValue); data(d)
        }
    }

    /// Strings: a count, then each as length-prefixed UTF-8.
    mutating func strings(_ list: [String]) {
        count(list.count)
        for s in list { string(s) }
    }

    /// A change's tag and payload (the value of a set, the amount of an increment, the members).
    mutating func fieldChange(_ c: FieldChange) {
        switch c {
        case .set(let v): byte(FieldCode.Change.set.rawValue); fieldValue(v)
        case .remove: byte(FieldCode.Change.remove.rawValue)
        case .increment(let n): byte(FieldCode.Change.increment.rawValue); signed(n)
        case .insert(let m): byte(FieldCode.Change.insert.rawValue); strings(m)
        case .delete(let m): byte(FieldCode.Change.delete.rawValue); strings(m)
        case .splice, .text: preconditionFailure("a text change is written with its references (Text/TextCoding.swift)")
        }
    }
}

extension WireReader {
    /// A UTF-8 string of at most `limit` bytes.
    mutating func utf8(limit: Int) throws(WireError) -> String {
        let at = offset
        let range = try dataRange(limit: limit)
        // Straight from the input's bytes, with no `Data` in between (a string per field name and
        // value is most of what decoding field writes costs). `String(decoding:)` is the fast,
        // specialized path; it repairs invalid UTF-8, so a string whose bytes differ from the
        // input's was not UTF-8 (`String(validating:)` goes through generic metadata here, ~5x slower).
        let s = bytes.withUnsafeBufferPointer { all -> String? in
            let part = UnsafeBufferPointer(rebasing: all[range])
            var s = String(decoding: part, as: UTF8.self)
            // Compared as memory (`elementsEqual` over the UTF-8 view walks it index by index).
            let same = s.utf8.count == part.count && (part.isEmpty || s.withUTF8 { memcmp($0.baseAddress!, part.baseAddress!, part.count) == 0 })
            return same ? s : nil
        }
        guard let s else { throw .invalidValue("a string that is not UTF-8", offset: at) }
        return s
    }

    /// A field value (``WireWriter/fieldValue(_:)``), whose bytes may be up to `maxValueSize`.
    mutating func fieldValue(maxValueSize: Int) throws(WireError) -> FieldValue {
        let at = offset
        let tag = try byte()
        switch FieldCode.Value(rawValue: tag) {
        case .null: return .null
        case .falseValue: return .bool(false)
        case .trueValue: return .bool(true)
        case .int: return .int(try signed())
        case .double:
            let d = Double(bitPattern: try varint())
            guard d.isFinite else { throw .invalidValue("a double that is not finite", offset: at) }
            return .double(d)
        case .string: return .string(try utf8(limit: maxValueSize))
        case .date:
            let ms = try signed()
            guard abs(ms) <= 9_000_000_000_000_000 else { throw .invalidValue("a date out of range", offset: at) }
            return .date(Date(timeIntervalSince1970: Double(ms) / 1000))
        case .bytes: return .bytes(try data(limit: maxValueSize))
        case nil: throw .invalidTag(tag, offset: at)
        }
    }

    /// Strings (``WireWriter/strings(_:)``): at most `maxCount`, each at most `limit` bytes.
    mutating func strings(maxCount: Int, limit: Int) throws(WireError) -> [String] {
        let at = offset
        let n = try count(minBytes: 1)
        guard n <= maxCount else { throw .countTooLarge(n, offset: at) }
        var out: [String] = []
        out.reserveCapacity(n)
        for _ in 0 ..< n { out.append(try utf8(limit: limit)) }
        return out
    }

    /// A change (``WireWriter/fieldChange(_:)``).
    mutating func fieldChange(maxValueSize: Int) throws(WireError) -> FieldChange {
        let at = offset
        let tag = try byte()
        switch FieldCode.Change(rawValue: tag) {
        case .set: return .set(try fieldValue(maxValueSize: maxValueSize))
        case .remove: return .remove
        case .increment: return .increment(try signed())
        case .insert: return .insert(try strings(maxCount: FieldLimits.maxMembers, limit: FieldLimits.maxMemberBytes))
        case .delete: return .delete(try strings(maxCount: FieldLimits.maxMembers, limit: FieldLimits.maxMemberBytes))
        case .text, nil: throw .invalidTag(tag, offset: at)
        }
    }
}
