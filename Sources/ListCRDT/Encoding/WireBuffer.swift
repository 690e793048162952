import Foundation

/// Appends the primitive pieces of the wire format (Docs/WireFormat.md) to a byte array.
package struct WireWriter {
    package var bytes: [UInt8] = []

    package init() {}

    /// Appends one byte.
    package mutating func byte(_ b: UInt8) { bytes.append(b) }

    /// Appends an unsigned LEB128 varint (1 to 10 bytes).
    package mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// Appends a non-negative count as a varint.
    package mutating func count(_ n: Int) { varint(UInt64(n)) }

    /// Appends a signed value as a zigzag varint.
    package mutating func signed(_ v: Int64) {
        varint(UInt64(bitPattern: (v << 1) ^ (v >> 63)))
    }

    /// Appends a string as its UTF-8 length and bytes (as ``data(_:)`` of its UTF-8, without
    /// the copy).
    package mutating func string(_ s: String) {
        count(s.utf8.count)
        bytes.append(contentsOf: s.utf8)
    }

    /// Appends a length and the bytes.
    package mutating func data(_ d: Data) {
        count(d.count)
        bytes.append(contentsOf: d)
    }
}

/// Reads the primitive pieces of the wire format, throwing a typed error on anything malformed.
///
/// Every method checks the bytes left before it reads or allocates anything.
package struct WireReader {
    let bytes: [UInt8]
    package private(set) var offset: Int = 0

    package init(_ bytes: some Collection<UInt8>) { self.bytes = Array(bytes) }

    /// The number of unread bytes.
    package var remaining: Int { bytes.count - offset }
    package var isAtEnd: Bool { offset == bytes.count }

    /// Moves back to an earlier offset (to read a field again with another meaning).
    package mutating func rewind(to offset: Int) { self.offset = offset }

    /// Reads one byte.
    package mutating func byte() throws(WireError) -> UInt8 {
        guard offset < bytes.count else { throw .truncated(offset: offset) }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// Reads an unsigned LEB128 varint: at most 10 bytes, no bits beyond 64.
    @inline(__always)
    package mutating func varint() throws(WireError) -> UInt64 {
        // Most varints of a batch are one byte: read those inline.
        if offset < bytes.count, bytes[offset] < 0x80 {
            defer { offset += 1 }
            return UInt64(bytes[offset])
        }
        return try longVarint()
    }

    /// ``varint()`` of more than one byte (or at the end of the input).
    private mutating func longVarint() throws(WireError) -> UInt64 {
        let start = offset
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < bytes.count else { throw .truncated(offset: offset) }
            let b = bytes[offset]
            offset += 1
            let payload = UInt64(b & 0x7f)
            if shift == 63, payload > 1 { throw .invalidVarint(offset: start) }
            result |= payload << shift
            if b & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw .invalidVarint(offset: start) }
        }
    }

    /// Reads a zigzag varint.
    package mutating func signed() throws(WireError) -> Int64 {
        let z = try varint()
        return Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1)
    }

    /// Reads a count of things each taking at least `minBytes` bytes, and checks that that many
    /// could still follow before anyone allocates room for them.
    package mutating func count(minBytes: Int = 1) throws(WireError) -> Int {
        let start = offset
        let v = try varint()
        let left = remaining
        guard v <= UInt64(Int.max), minBytes == 0 || Int(v) <= left / minBytes else {
            throw .countTooLarge(v > UInt64(Int.max) ? Int.max : Int(v), offset: start)
        }
        return Int(v)
    }

    /// Reads `n` raw bytes (already known to be available or checked here).
    package mutating func raw(_ n: Int) throws(WireError) -> ArraySlice<UInt8> {
        guard n <= remaining else { throw .truncated(offset: bytes.count) }
        defer { offset += n }
        return bytes[offset..<offset + n]
    }

    /// Takes the next `length` bytes as a packed area of bit fields, read by the returned
    /// ``BitReader``; the reader continues after the area.
    ///
    /// - Throws: `truncated(offset:)` if fewer than `length` bytes are left.
    /// - Complexity: O(1) (the area is not copied).
    package mutating func bitArea(length: Int) throws(WireError) -> BitReader {
        guard length >= 0, length <= remaining else { throw .truncated(offset: bytes.count) }
        defer { offset += length }
        return BitReader(bytes, range: offset..<offset + length)
    }

    /// Reads a length-prefixed byte string no longer than `limit` (as ``data(limit:)``, with the
    /// same checks and errors) and returns where its bytes are in the input, without copying them.
    mutating func dataRange(limit: Int) throws(WireError) -> Range<Int> {
        let start = offset
        let n = try varint()
        let limit = max(limit, 0)
        guard n <= UInt64(limit) else { throw .valueTooLarge(n > UInt64(Int.max) ? Int.max : Int(n), limit: limit, offset: start) }
        guard Int(n) <= remaining else { throw .truncated(offset: bytes.count) }
        offset += Int(n)
        return offset - Int(n)..<offset
    }

    /// Reads a length-prefixed byte string no longer than `limit`.
    package mutating func data(limit: Int) throws(WireError) -> Data {
        let start = offset
        let n = try varint()
        let limit = max(limit, 0)
        guard n <= UInt64(limit) else { throw .valueTooLarge(n > UInt64(Int.max) ? Int.max : Int(n), limit: limit, offset: start) }
        guard Int(n) <= remaining else { throw .truncated(offset: bytes.count) }
        return Data(try raw(Int(n)))
    }
}
