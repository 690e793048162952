import ListCRDT

/// Appends LEB128 varints and raw bytes to a buffer.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func byte(_ b: UInt8) { bytes.append(b) }

    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func blob(_ b: [UInt8]) {
        varint(UInt64(b.count))
        bytes.append(contentsOf: b)
    }
}

/// Reads what `ByteWriter` wrote, checking every length against the bytes left.
struct ByteReader {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func byte() throws(SyncError) -> UInt8 {
        guard offset < bytes.count else { throw .malformedFrame("truncated at byte \(offset)") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func varint() throws(SyncError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            if shift == 63 && b > 1 { throw .malformedFrame("varint overflows at byte \(offset - 1)") }
            result |= UInt64(b & 0x7f) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw .malformedFrame("varint too long at byte \(offset - 1)") }
        }
    }

    /// A count of items each at least `minimumSize` bytes long: refused if the bytes left cannot hold them.
    mutating func count(minimumSize: Int) throws(SyncError) -> Int {
        let n = try varint()
        guard n <= UInt64(remaining / max(minimumSize, 1)) else {
            throw .malformedFrame("count \(n) at byte \(offset) is more than the \(remaining) bytes left can hold")
        }
        return Int(n)
    }

    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }
}
