#if canImport(Glibc)
import Foundation
import Glibc
import ListSyncFaults
import ListSyncTCP
import ListSyncTestSupport
import Testing
import ListSyncTestTraits

/// A blocking TCP echo server on 127.0.0.1 (a thread per connection): a test's target.
final class EchoServer: @unchecked Sendable {
    // @unchecked Sendable: `fd` and `port` are immutable after init.
    let fd: Int32
    let port: UInt16

    init() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        self.fd = fd
        port = UInt16(bigEndian: addr.sin_port)
        let listener = fd
        Thread {
            while true {
                let c = accept(listener, nil, nil)
                if c < 0 { return }
                Thread {
                    var buf = [UInt8](repeating: 0, count: 65_536)
                    while true {
                        let n = buf.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
                        if n <= 0 { break }
                        var off = 0
                        while off < n {
                            let w = buf[off..<n].withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                            if w <= 0 { break }
                            off += w
                        }
                    }
                    close(c)
                }.start()
            }
        }.start()
    }

    func stop() { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
}

/// Connects to 127.0.0.1:`port`, sends `bytes` and reads until the peer closes or `bytes.count`
/// came back (blocking, with a receive timeout): what came back.
func echoThrough(port: UInt16, _ bytes: [UInt8], timeout: Int = 10) -> [UInt8] {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var tv = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = port.bigEndian
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
    let ok = withUnsafePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
    guard ok else { return [] }
    let writerDone = DispatchSemaphore(value: 0)
    defer {
        // The writer must be gone before the descriptor is closed (and its number reused).
        shutdown(fd, Int32(SHUT_RDWR))
        writerDone.wait()
    }
    let writer = Thread {
        defer { writerDone.signal() }
        var off = 0
        while off < bytes.count {
            let w = bytes[off...].withUnsafeBytes { send(fd, $0.baseAddress, min($0.count, 4_096), Int32(MSG_NOSIGNAL)) }
            if w <= 0 { return }
            off += w
        }
    }
    writer.start()
    var got: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65_536)
    while got.count < bytes.count {
        let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        got += buf[0..<n]
    }
    return got
}

@Suite("Fault proxy over sockets (one suite at a time)", .serialized) struct FaultProxySocketSuites {}

extension FaultProxySocketSuites {
    @Suite("Fault proxy: bytes delayed, stalled or cut, never altered", .serialized, .hangGuard)
    struct FaultProxySocketTests {
        static func payload(_ n: Int, seed: UInt64) -> [UInt8] {
            var rng = FaultRandom(seed: seed)
            return (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        }

        @Test("200 KB each way through delays and stalls: every byte back, in order; no socket left open")
        func delaysAndStalls() async throws {
            let echo = EchoServer()
            defer { echo.stop() }
            var plan = FaultPlan(seed: 3)
            plan.delay = .zero ... .milliseconds(3)
            plan.segmentBytes = 1 ... 4_096
            plan.stallProbability = 0.05
            plan.stall = .milliseconds(20) ... .milliseconds(100)
            let proxy = try await FaultProxy.start(to: try #require(SocketAddress(numeric: "127.0.0.1", port: echo.port)), plan: plan,
                                                   bufferLimit: 32_768)
            let sent = Self.payload(200_000, seed: 1)
            let port = proxy.port
            let got = await offPool { echoThrough(port: port, sent) }
            #expect(got.count == sent.count)
            #expect(got == sent, "bytes altered or reordered")
            let stats = await proxy.statistics()
            #expect(stats.bytesUpstream == sent.count && stats.bytesDownstream == sent.count)
            #expect(stats.stalls > 0 && stats.delayedSegments > 0)
            var open = 1
            // Polled for up to a minute, a liveness guard (the close comes at once on a quiet machine).
            for _ in 0..<6_000 where open != 0 {
                open = await proxy.openConnections()
                if open != 0 { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(open == 0, "the proxied connection closed with the client")
            #expect(await proxy.loop.registeredDescriptors() == 1, "only the listener is left")
            await proxy.close()
        }

        @Test("cuts: each connection gets back a prefix of what it sent, exactly its cut point's share, then end of stream")
        func cuts() async throws {
            let echo = EchoServer()
            defer { echo.stop() }
            var plan = FaultPlan(seed: 5)
            plan.cutProbability = 1
            plan.cutBytes = 1 ... 20_000
            plan.resetProbability = 0
            let proxy = try await FaultProxy.start(to: try #require(SocketAddress(numeric: "127.0.0.1", port: echo.port)), plan: plan)
            let port = proxy.port
            for k in 0..<5 {
                let sent = Self.payload(30_000, seed: UInt64(k))
                let got = await offPool { echoThrough(port: port, sent) }
                #expect(got.count < sent.count, "cut before everything came back")
                #expect(Array(sent.prefix(got.count)) == got, "what came back is a prefix of what was sent")
            }
            let stats = await proxy.statistics()
            #expect(stats.cut == 5)
            await proxy.close()
        }

        @Test("partition (reset) refuses, blackhole holds; heal lets everything through")
        func partitions() async throws {
            let echo = EchoServer()
            defer { echo.stop() }
            for mode in PartitionMode.allCases {
                var plan = FaultPlan(seed: 9)
                plan.partitionMode = mode
                let proxy = try await FaultProxy.start(to: try #require(SocketAddress(numeric: "127.0.0.1", port: echo.port)), plan: plan)
                let port = proxy.port
                await proxy.partition()
                let sent = Self.payload(10_000, seed: 2)
                if mode == .reset {
                    let got = await offPool { echoThrough(port: port, sent, timeout: 2) }
                    #expect(got.isEmpty, "refused during a reset partition")
                    await proxy.heal()
                    #expect(await offPool { echoThrough(port: port, sent) } == sent)
                } else {
                    let pending = Task { await offPool { echoThrough(port: port, sent, timeout: 10) } }
                    try await Task.sleep(for: .milliseconds(300))
                    #expect(await proxy.statistics().bytesUpstream == 0, "nothing passes a blackhole")
                    await proxy.heal()
                    #expect(await pending.value == sent, "held, then delivered whole at the heal")
                }
                await proxy.close()
            }
        }
    }
}
#endif
