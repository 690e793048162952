import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a child process's output to its end on a thread of its own, with blocking reads,
/// handing each piece to a sink: what the tests and benchmarks that run the real binaries use
/// instead of `FileHandle.readabilityHandler`.
///
/// A readability handler is a dispatch read source on the pipe's descriptor; on Linux, tearing
/// it down races the descriptor's close, and the race has crashed a whole test run with a
/// segmentation fault in libdispatch's event loop (`_dispatch_event_loop_drain`, reading a
/// dangling epoll registration). A blocking read never registers the descriptor with
/// libdispatch, and the handle is kept until the read has seen the end of the stream (the
/// child exited and every copy of the write end is closed), so its descriptor is closed only
/// after the last read.
public enum PipeDrain {
    /// Starts reading `handle` (a pipe's read end, whose write end the child holds) until the
    /// end of the stream, calling `sink` with each piece read, on a new thread. A failed read
    /// other than an interruption ends it too.
    ///
    /// - Complexity: O(n) for n bytes read.
    public static func start(_ handle: FileHandle, name: String = "listsync-pipe-drain",
                             _ sink: @escaping @Sendable (Data) -> Void) {
        let box = HandleBox(handle)
        let thread = Thread {
            let fd = box.handle.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    sink(Data(buffer[0..<n]))
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            // The handle (and with it the descriptor) lives until here.
            withExtendedLifetime(box) {}
        }
        thread.name = name
        thread.start()
    }

    /// Starts draining the read end of `pipe` (``start(_:name:_:)``).
    public static func start(_ pipe: Pipe, name: String = "listsync-pipe-drain", _ sink: @escaping @Sendable (Data) -> Void) {
        start(pipe.fileHandleForReading, name: name, sink)
    }
}

/// A file handle carried to the draining thread (used by that thread alone once started).
private final class HandleBox: @unchecked Sendable {
    let handle: FileHandle
    init(_ handle: FileHandle) { self.handle = handle }
}
