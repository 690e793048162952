import ListSyncTransport

/// The bytes a non-blocking socket has queued and not yet written, and the one loop that writes
/// them: the project's sockets (``SocketConnection`` and the NATS client's) share it.
package struct OutboundBuffer {
    private var bytes: [UInt8] = []
    private var sent = 0

    package init() {}

    /// Bytes queued and not yet written.
    package var queued: Int { bytes.count - sent }

    /// Queues `more` after what is there (reusing the storage once everything was written).
    package mutating func append(_ more: [UInt8]) {
        appendInPlace { $0.append(contentsOf: more) }
    }

    /// Queues what `fill` appends to the bytes queued (it must only append): a frame made where
    /// it waits to be written, without an array of its own to copy.
    package mutating func appendInPlace<E: Error>(_ fill: (inout [UInt8]) throws(E) -> Void) throws(E) {
        if sent == bytes.count {
            bytes.removeAll(keepingCapacity: true)
            sent = 0
        }
        try fill(&bytes)
    }

    /// Drops everything queued.
    package mutating func clear() {
        bytes = []
        sent = 0
    }

    /// Writes to `fd` what it takes without blocking; returns the bytes written, or the error of
    /// the `write` that failed. Storage over 1 MiB is released once everything is written.
    ///
    /// - Complexity: O(n) for n bytes written, one `write` per call the socket accepts.
    package mutating func write(to fd: Int32) -> Result<Int, TransportError> {
        var total = 0
        while sent < bytes.count {
            let written: Result<Int?, TransportError> = bytes.withUnsafeBytes { b in
                do throws(TransportError) {
                    return .success(try System.write(fd, UnsafeRawBufferPointer(rebasing: b[sent...])))
                } catch { return .failure(error) }
            }
            let n: Int?
            switch written {
            case let .success(value): n = value
            case let .failure(error): return .failure(error)
            }
            guard let n else { break }
            sent += n
            total += n
        }
        if sent == bytes.count {
            bytes.removeAll(keepingCapacity: bytes.capacity <= 1 << 20)
            sent = 0
        }
        return .success(total)
    }
}
