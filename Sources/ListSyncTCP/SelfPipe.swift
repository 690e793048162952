import ListSyncTransport

/// The wake-up of the poll and kqueue pollers: a pipe whose read end the poller watches, and into
/// whose write end ``wake()`` puts a byte (the "self-pipe trick"). Both ends are non-blocking and
/// close-on-exec; the same code on every POSIX system (epoll on Linux uses an eventfd instead).
struct SelfPipe {
    /// The end the poller watches for readability.
    let readFD: Int32
    /// The end ``wake()`` writes to.
    let writeFD: Int32

    /// A new pipe.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` if `pipe` or `fcntl` fails.
    init() throws(TransportError) {
        (readFD, writeFD) = try System.pipe()
    }

    /// Makes the poller's wait return. Any thread. A full pipe (`EAGAIN`) already holds a wake-up
    /// not yet consumed, so nothing is lost; any other error is a closed pipe, after `close()`,
    /// where no wait is left to wake.
    func wake() {
        var byte: UInt8 = 1
        _ = try? withUnsafeBytes(of: &byte) { b throws(TransportError) in try System.writeDescriptor(writeFD, b) }
    }

    /// Consumes every wake-up sent so far. Poller's thread.
    ///
    /// Complexity: O(wake-ups pending / 256) reads.
    func drain() {
        withUnsafeTemporaryAllocation(byteCount: 256, alignment: 8) { buffer in
            while true {
                // A read error (none is expected on a pipe this poller owns) ends the draining as an
                // empty pipe does: a wake-up left behind costs one spurious turn of the loop.
                let n = try? System.read(readFD, buffer)
                guard let n, n == buffer.count else { return }
            }
        }
    }

    /// Closes both ends. Once, last.
    func close() {
        System.close(readFD)
        System.close(writeFD)
    }
}
