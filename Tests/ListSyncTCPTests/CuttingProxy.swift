#if canImport(Glibc)
import Glibc
import Foundation
import Synchronization
import ListSyncRandom

/// A TCP proxy for tests, between a client and a listener on 127.0.0.1: it forwards bytes both
/// ways and, for its first `cuts` connections, closes both sides after a seeded random number of
/// bytes (so a connection dies mid-handshake, mid-frame or mid-sync). Later connections pass.
/// One thread per proxied connection: it is a test tool, not part of the product.
final class CuttingProxy: @unchecked Sendable {
    // @unchecked Sendable: `listenFD` is immutable; the counters are behind a Mutex.
    let port: UInt16
    private let listenFD: Int32
    private let target: UInt16
    private let state: Mutex<(rng: SplitMix64, cutsLeft: Int, cutAt: [Int], stopped: Bool, open: [Int32])>

    init?(to target: UInt16, cuts: Int, maxBytes: Int, seed: UInt64) {
        self.target = target
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        listenFD = fd
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bind(fd, sa, len) == 0 && listen(fd, 64) == 0 && getsockname(fd, sa, &len) == 0
            }
        }
        guard ok else {
            close(fd)
            return nil
        }
        port = UInt16(bigEndian: addr.sin_port)
        var rng = SplitMix64(seed: seed)
        let cutAt = (0..<cuts).map { _ in 1 + Int(rng.next() % UInt64(maxBytes)) }
        state = Mutex((rng, cuts, cutAt, false, []))
        let t = Thread { [self] in acceptLoop() }
        t.start()
    }

    /// The byte counts at which the cut connections were closed.
    var cutPoints: [Int] { state.withLock { $0.cutAt } }

    /// Stops accepting and closes every proxied connection.
    func stop() {
        let fds = state.withLock { s -> [Int32] in
            s.stopped = true
            return s.open
        }
        shutdown(listenFD, Int32(SHUT_RDWR))
        for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        var index = 0
        while true {
            let client = accept(listenFD, nil, nil)
            if client < 0 { break }
            if state.withLock({ $0.stopped }) {
                close(client)
                break
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = target.bigEndian
            inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
            let connected = withUnsafePointer(to: &addr) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0
            if !connected {
                close(client)
                close(upstream)
                continue
            }
            let limit: Int? = state.withLock { s in
                defer { s.open += [client, upstream] }
                guard index < s.cutAt.count else { return nil }
                return s.cutAt[index]
            }
            index += 1
            let t = Thread { [self] in pump(client, upstream, limit: limit) }
            t.start()
        }
        close(listenFD)
    }

    /// Forwards both ways until either side closes or `limit` bytes have passed in all.
    private func pump(_ a: Int32, _ b: Int32, limit: Int?) {
        var passed = 0
        var buf = [UInt8](repeating: 0, count: 16_384)
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        loop: while true {
            guard poll(&fds, 2, 200) >= 0 else { break }
            if state.withLock({ $0.stopped }) { break }
            for i in 0..<2 where fds[i].revents != 0 {
                let from = fds[i].fd, to = fds[1 - i].fd
                var want = buf.count
                if let limit { want = min(want, limit - passed) }
                let n = buf.withUnsafeMutableBytes { recv(from, $0.baseAddress, want, 0) }
                if n <= 0 { break loop }
                var off = 0
                while off < n {
                    let w = buf[off..<n].withUnsafeBytes { send(to, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if w <= 0 { break loop }
                    off += w
                }
                passed += n
                if let limit, passed >= limit { break loop }
            }
        }
        state.withLock { s in s.open.removeAll { $0 == a || $0 == b } }
        close(a)
        close(b)
    }
}
#endif
