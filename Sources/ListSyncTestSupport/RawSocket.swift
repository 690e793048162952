// Linux only (the socket tests are; Glibc spellings); the whole file compiles away elsewhere.
#if canImport(Glibc)
import Glibc
import Foundation

/// A blocking TCP client for attack tests (test support, not part of the product): it sends whatever bytes the test chooses, from a
/// chosen 127.x source address, and watches whether the server closes.
// @unchecked Sendable: each test uses its sockets from one task at a time.
public final class RawSocket: @unchecked Sendable {
    /// The socket; -1 once closed (a failed init closes it, and deinit must not close the number
    /// again: by then it may be another test's descriptor).
    public private(set) var fd: Int32

    /// Connects from `source` (any 127.0.0.0/8 address) to 127.0.0.1:`port`; `nil` if refused.
    public init?(port: UInt16, source: String = "127.0.0.2") {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let ok = withUnsafePointer(to: &local) { l in
            l.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0 && withUnsafePointer(to: &remote) { r in
            r.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
        if !ok {
            close(fd)
            fd = -1
            return nil
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Sends all of `bytes`; `false` if the connection is gone.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            off += n
        }
        return true
    }

    /// Reads whatever arrives within `timeout` seconds, up to `count` bytes (fewer at a close).
    /// The wait runs on a thread of its own (see ``offPool(_:)``), not on the test's pool thread.
    public func read(_ count: Int, timeout: Double) async -> [UInt8] {
        await offPool { self.blockingRead(count, timeout: timeout) }
    }

    /// Whatever has arrived, up to `max` bytes, as soon as anything has (one `recv`); empty after
    /// `timeout` seconds with nothing, or at a close. The wait runs on a thread of its own.
    public func readSome(upTo max: Int = 4096, timeout: Double) async -> [UInt8] {
        await offPool {
            var p = pollfd(fd: self.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(timeout * 1000)) > 0 else { return [] }
            var buf = [UInt8](repeating: 0, count: max)
            let n = buf.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, $0.count, 0) }
            return n > 0 ? Array(buf[0..<n]) : []
        }
    }

    /// Whether the server closed the connection within `timeout` seconds (bytes before the close
    /// are read and dropped). The wait runs on a thread of its own.
    public func closedByPeer(within timeout: Double) async -> Bool {
        await offPool { self.blockingClosedByPeer(within: timeout) }
    }

    private func blockingRead(_ count: Int, timeout: Double) -> [UInt8] {
        var out: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while out.count < count {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { break }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(left * 1000) + 1) > 0 else { break }
            var buf = [UInt8](repeating: 0, count: count - out.count)
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return out
    }

    private func blockingClosedByPeer(within timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return false }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(left * 1000) + 1) > 0 else { return false }
            var buf = [UInt8](repeating: 0, count: 4096)
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return true }
        }
    }
}

#endif
