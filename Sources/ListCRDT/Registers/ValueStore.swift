import Foundation

/// The insert values of a table's entities, by dense index, packed in one byte array.
///
/// A `Data` per entity took 16 bytes even for the one-byte values of text (issue 29: memory per
/// operation of history); here an entity costs 4 bytes of offset plus its value's bytes. Values are
/// appended once and never change (a later value write is kept by ``EntityTable`` apart, in its
/// `replaced` table), so entity `i`'s bytes are `bytes[ends[i - 1] ..< ends[i]]` (from 0 for the
/// first). A document's values hold at most 4 GiB in all (the offsets are `UInt32`).
struct ValueStore: Sendable {
    /// Every value's bytes, one after the other.
    private(set) var bytes: [UInt8] = []
    /// For each entity, the end of its bytes in ``bytes``.
    private(set) var ends: [UInt32] = []

    init() {}

    /// The values `values` in order.
    ///
    /// - Complexity: O(n + total bytes).
    init(_ values: some Sequence<Data>) {
        for v in values { append(v) }
    }

    /// Values laid out already: `bytes`, and for each entity the length of its value (in order).
    ///
    /// - Complexity: O(n).
    init(bytes: [UInt8], lengths: [(count: Int, length: Int)]) {
        precondition(bytes.count <= Int(UInt32.max), "values over 4 GiB")
        self.bytes = bytes
        // Written through a pointer into room made once: appending one at a time checked
        // uniqueness and room for each value (5% of a snapshot load of the friendsforever trace).
        let total = lengths.reduce(0) { $0 + $1.count }
        var end = 0
        ends = [UInt32](unsafeUninitializedCapacity: total) { buffer, initialized in
            var k = 0
            for run in lengths {
                precondition(run.count >= 0 && run.count <= total - k, "value run counts do not add up")
                for _ in 0 ..< run.count {
                    end += run.length
                    (buffer.baseAddress! + k).initialize(to: UInt32(truncatingIfNeeded: end))
                    k += 1
                }
            }
            initialized = k
        }
        precondition(end == bytes.count, "value lengths do not add up to the bytes")
    }

    /// Number of values.
    var count: Int { ends.count }

    /// The bytes of value `i`, as positions in ``bytes``.
    @inline(__always) func range(_ i: Int) -> Range<Int> {
        (i == 0 ? 0 : Int(ends[i - 1])) ..< Int(ends[i])
    }

    /// The length of value `i`.
    @inline(__always) func length(_ i: Int) -> Int { range(i).count }

    /// Value `i` (a copy of its bytes: up to 14 bytes are held inline in the `Data`, no allocation).
    ///
    /// - Complexity: O(length of the value).
    subscript(i: Int) -> Data {
        let r = range(i)
        if r.isEmpty { return Data() }
        return bytes.withUnsafeBufferPointer { Data(bytes: $0.baseAddress! + r.lowerBound, count: r.count) }
    }

    /// Appends a value.
    ///
    /// - Complexity: O(length of the value) amortized.
    @inline(__always)
    mutating func append(_ v: Data) {
        switch v.count {
        case 0: break
        case 1: bytes.append(v[v.startIndex])  // text: no generic sequence append
        default: v.withUnsafeBytes { bytes.append(contentsOf: $0) }
        }
        precondition(bytes.count <= Int(UInt32.max), "values over 4 GiB")
        ends.append(UInt32(truncatingIfNeeded: bytes.count))
    }

    /// Appends values (one reservation).
    ///
    /// - Complexity: O(n + their bytes) amortized.
    @inline(__always)
    mutating func append(contentsOf values: some Collection<Data>) {
        ends.reserveCapacity(more: values.count)
        for v in values { append(v) }
    }

    /// Appends one value per byte of `oneByte` (a typed run's values, as a decoded batch holds them).
    ///
    /// - Complexity: O(n) amortized.
    @inline(__always)
    mutating func append(oneByteValues oneByte: UnsafeBufferPointer<UInt8>) {
        let start = bytes.count
        bytes.append(contentsOf: oneByte)
        precondition(bytes.count <= Int(UInt32.max), "values over 4 GiB")
        ends.append(contentsOf: OneByteEnds(end: UInt32(truncatingIfNeeded: start + 1), left: oneByte.count))
    }

    /// Makes room for `n` more values of `length` bytes on average.
    ///
    /// - Complexity: O(count) when it grows, else O(1).
    mutating func reserveCapacity(more n: Int, length: Int = 1) {
        ends.reserveCapacity(more: n)
        bytes.reserveCapacity(more: n * length)
    }

    /// Heap bytes (array capacities), for ``ListDocument/memoryBreakdown``.
    var heapBytes: Int { bytes.capacity + ends.capacity * MemoryLayout<UInt32>.stride }
}

/// The ends of `left` one-byte values whose first ends at `end`, as a sequence that an array
/// appends in one loop (`_copyContents`; appending them one at a time checks uniqueness and room
/// for each).
private struct OneByteEnds: Sequence, IteratorProtocol {
    var end: UInt32
    var left: Int

    var underestimatedCount: Int { left }

    mutating func next() -> UInt32? {
        guard left > 0 else { return nil }
        left -= 1
        defer { end &+= 1 }
        return end
    }

    /// Writes the ends left (as many as fit) straight into `buffer`; returns the ends not written
    /// and the number written.
    func _copyContents(initializing buffer: UnsafeMutableBufferPointer<UInt32>) -> (OneByteEnds, Int) {
        let n = Swift.min(left, buffer.count)
        guard n > 0, let base = buffer.baseAddress else { return (self, 0) }
        for k in 0 ..< n { (base + k).initialize(to: end &+ UInt32(truncatingIfNeeded: k)) }
        return (OneByteEnds(end: end &+ UInt32(truncatingIfNeeded: n), left: left - n), n)
    }
}
