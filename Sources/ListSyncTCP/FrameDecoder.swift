/// Splits a byte stream into length-prefixed frames: `u32 BE length | body` (Docs/Transport.md).
///
/// A state machine with no socket inside: bytes go in with ``append(_:)`` in pieces of any size,
/// whole frames come out of ``next()``. The length is checked against ``limit`` as soon as its
/// four bytes are in, before any of the body is waited for, so a peer cannot make the decoder
/// buffer more than `limit + 4` bytes.
struct FrameDecoder: Sendable {
    /// One frame: its 4-byte length field (the AAD of an encrypted frame) and its body.
    struct Frame: Equatable, Sendable {
        var header: [UInt8]
        var body: [UInt8]
    }

    /// The largest body accepted; changed when the handshake ends.
    var limit: Int
    private var buffer: [UInt8] = []
    private var start = 0

    init(limit: Int) { self.limit = limit }

    /// Bytes received and not yet returned as frames.
    var buffered: Int { buffer.count - start }

    /// Adds received bytes.
    mutating func append(_ bytes: some Collection<UInt8>) {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, or `nil` until more bytes arrive.
    ///
    /// - Throws: ``FrameError`` for a length of zero or over ``limit``; the decoder is then
    ///   unusable (the connection must close).
    /// - Complexity: O(body).
    mutating func next() throws(FrameError) -> Frame? {
        guard buffer.count - start >= 4 else { return nil }
        let length = Int(buffer[start]) << 24 | Int(buffer[start + 1]) << 16 | Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
        guard length >= 1 else { throw .emptyFrame }
        guard length <= limit else { throw .tooLarge(length: length, limit: limit) }
        guard buffer.count - start >= 4 + length else { return nil }
        let frame = Frame(header: Array(buffer[start..<start + 4]), body: Array(buffer[start + 4..<start + 4 + length]))
        start += 4 + length
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 16)
            start = 0
        }
        return frame
    }

    /// The 4-byte big-endian length field for a body of `count` bytes.
    static func header(_ count: Int) -> [UInt8] {
        [UInt8(truncatingIfNeeded: count >> 24), UInt8(truncatingIfNeeded: count >> 16),
         UInt8(truncatingIfNeeded: count >> 8), UInt8(truncatingIfNeeded: count)]
    }
}

/// Why a byte stream is not a valid sequence of frames.
enum FrameError: Error, Hashable, Sendable {
    /// A length field of zero.
    case emptyFrame
    /// A length field over the cap for the connection's state.
    case tooLarge(length: Int, limit: Int)
}
