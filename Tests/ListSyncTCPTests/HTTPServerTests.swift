#if canImport(Glibc)
import Glibc
import Foundation
import Testing
import ListSyncTestSupport
import ListSyncTestTraits
import ListSync
import ListSyncTCP
import Synchronization
@testable import ListSyncHTTP

/// Runs `body` with a fresh loop and an HTTP server on 127.0.0.1 (any port) that answers
/// `200 "hello <path>[?query]"` (404 for `/missing`), then closes both and checks that every
/// socket the loop drove is closed again.
///
/// `/gate` is answered only once `gate` is open: a request being answered, as long as the test
/// wants.
func withHTTPServer(options: HTTPServerOptions = .init(), gate: HTTPTestGate = HTTPTestGate(open: true),
                    _ body: (EventLoop, HTTPServer) async throws -> Void) async throws {
    let loop = try EventLoop()
    let server = try await HTTPServer.listen(host: "127.0.0.1", port: 0, options: options, loop: loop) { request in
        if request.path == "/missing" { return HTTPResponse(status: 404, text: "no such page\n") }
        if request.path == "/gate" {
            gate.arrived()
            while !gate.isOpen, !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
        }
        return HTTPResponse(text: "hello \(request.path)\(request.query.map { "?" + $0 } ?? "")",
                            headers: [("X-Server", "listsync")])
    }
    do {
        try await body(loop, server)
    } catch {
        await server.close()
        loop.shutdown()
        throw error
    }
    await server.close()
    #expect(server.statistics.open == 0)
    let left = await loop.registeredDescriptors()
    loop.shutdown()
    if left != 0 { throw TestFailure("\(left) socket(s) still open on the loop after the test") }
}

/// A flag the `/gate` handler of ``withHTTPServer(options:gate:_:)`` waits for.
final class HTTPTestGate: Sendable {
    private let flag: Mutex<Bool>
    private let count = Mutex(0)
    init(open: Bool) { flag = Mutex(open) }
    var isOpen: Bool { flag.withLock { $0 } }
    func open() { flag.withLock { $0 = true } }
    /// How many requests reached the handler of `/gate`.
    var waiting: Int { count.withLock { $0 } }
    func arrived() { count.withLock { $0 += 1 } }
}

/// A response as read off a socket.
struct RawResponse {
    var status: Int
    var headers: [String: String]   // lowercased names
    var body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }
}

extension RawSocket {
    /// Reads one response (its body by `Content-Length`, none if `head`), or `nil` on a close or
    /// after `timeout` seconds; the wait runs on a thread of its own.
    func readResponse(head: Bool = false, timeout: Double = 10) async -> RawResponse? {
        await offPool { self.blockingReadResponse(head: head, timeout: timeout) }
    }

    private func blockingReadResponse(head: Bool, timeout: Double) -> RawResponse? {
        var data: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        func more() -> Bool {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return false }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(left * 1000) + 1) > 0 else { return false }
            var buf = [UInt8](repeating: 0, count: 1)   // one byte at a time: never read past a response
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 1, 0) }
            if n <= 0 { return false }
            data += buf[0..<n]
            return true
        }
        while !(data.count >= 4 && data.suffix(4).elementsEqual("\r\n\r\n".utf8)) {
            guard more() else { return nil }
        }
        let lines = String(decoding: data, as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            let kv = line.split(separator: ":", maxSplits: 1)
            headers[kv[0].lowercased()] = kv.count > 1 ? kv[1].trimmingCharacters(in: .whitespaces) : ""
        }
        let length = head ? 0 : Int(headers["content-length"] ?? "0") ?? 0
        data = []
        while data.count < length { guard more() else { return nil } }
        return RawResponse(status: status, headers: headers, body: data)
    }

    /// Sends `text` as bytes.
    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }
}

extension SocketTests {
    @Suite("HTTP server over real sockets: keep-alive, methods, limits, deadlines", .serialized, .hangGuard)
    struct HTTPServerTests {
        @Test("GET gets the handler's body and headers; keep-alive serves three requests on one connection; HEAD has no body")
        func getKeepAliveHead() async throws {
            try await withHTTPServer { _, server in
                let raw = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                raw.send("GET /metrics?x=1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
                let r = try #require(await raw.readResponse())
                #expect(r.status == 200)
                #expect(r.text == "hello /metrics?x=1")
                #expect(r.headers["content-length"] == "18")
                #expect(r.headers["content-type"] == "text/plain; charset=utf-8")
                #expect(r.headers["x-server"] == "listsync")
                #expect(r.headers["connection"] == nil)
                // Same connection: a second request, then a HEAD, then a 404 from the handler.
                raw.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\nHEAD /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n")
                #expect(await raw.readResponse()?.text == "hello /healthz")
                let head = try #require(await raw.readResponse(head: true))
                #expect(head.status == 200 && head.headers["content-length"] == "13" && head.body.isEmpty)
                raw.send("GET /missing HTTP/1.1\r\nHost: localhost\r\n\r\n")
                #expect(await raw.readResponse()?.status == 404)   // also proves HEAD sent no body bytes
                #expect(server.statistics.accepted == 1 && server.statistics.responses == 4)
            }
        }

        @Test("POST gets 405 with Allow and the connection stays; a POST with a body gets 413 and a close")
        func methods() async throws {
            try await withHTTPServer { _, server in
                let raw = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                raw.send("POST /metrics HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
                let r = try #require(await raw.readResponse())
                #expect(r.status == 405 && r.headers["allow"] == "GET, HEAD")
                raw.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(await raw.readResponse()?.status == 200)
                raw.send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
                let big = try #require(await raw.readResponse())
                #expect(big.status == 413 && big.headers["connection"] == "close")
                #expect(await raw.closedByPeer(within: livenessGuardSeconds))
            }
        }

        @Test("Connection: close and HTTP/1.0 without keep-alive are answered, then closed")
        func connectionClose() async throws {
            try await withHTTPServer { _, server in
                let raw = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                raw.send("GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
                let r = try #require(await raw.readResponse())
                #expect(r.text == "hello /a" && r.headers["connection"] == "close")
                #expect(await raw.closedByPeer(within: livenessGuardSeconds))
                let old = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                old.send("GET /b HTTP/1.0\r\n\r\n")
                #expect(await old.readResponse()?.headers["connection"] == "close")
                #expect(await old.closedByPeer(within: livenessGuardSeconds))
                let kept = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                kept.send("GET /c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                #expect(await kept.readResponse()?.headers["connection"] == "keep-alive")
                kept.send("GET /d HTTP/1.0\r\n\r\n")
                #expect(await kept.readResponse()?.text == "hello /d")
                #expect(await kept.closedByPeer(within: livenessGuardSeconds))
            }
        }

        @Test("oversized headers get 431, garbage gets 400, a bad version 505: each then closed")
        func refusals() async throws {
            var options = HTTPServerOptions()
            options.maxHeadBytes = 1024
            try await withHTTPServer(options: options) { _, server in
                let big = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                big.send("GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + String(repeating: "a", count: 4000) + "\r\n\r\n")
                #expect(await big.readResponse()?.status == 431)
                #expect(await big.closedByPeer(within: livenessGuardSeconds))
                let garbage = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                garbage.send([0x16, 0x03, 0x01, 0x00, 0xA5, 0x01, 0x00, 0x00, 0xA1, 0x03, 0x03, 0x0A, 0x0D, 0x0A])
                let g = try #require(await garbage.readResponse())
                #expect(g.status == 400 && g.headers["connection"] == "close")
                #expect(await garbage.closedByPeer(within: livenessGuardSeconds))
                let v2 = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                v2.send("GET / HTTP/2.0\r\n\r\n")
                #expect(await v2.readResponse()?.status == 505)
                #expect(await v2.closedByPeer(within: livenessGuardSeconds))
                #expect(server.statistics.rejected == 3)
            }
        }

        @Test("a slowloris sending a byte every 200 ms is closed at the read deadline; an idle keep-alive at the idle deadline")
        func deadlines() async throws {
            var options = HTTPServerOptions()
            options.readTimeout = .milliseconds(600)
            options.idleTimeout = .milliseconds(400)
            try await withHTTPServer(options: options) { _, server in
                let slow = try #require(RawSocket(port: server.port, source: "127.0.0.2"))
                let start = Date()
                var closedAt: Double?
                for b in "GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ".utf8 {
                    let closed = await !slow.send([b]) ? true : slow.closedByPeer(within: 0.2)
                    if closed {
                        closedAt = Date().timeIntervalSince(start)
                        break
                    }
                }
                // The deadline is 0.6 s; the whole head would take 8 s: closed before it went
                // through (an event), never before the deadline (a lower bound, which load only
                // lengthens). No upper bound on the time: a loaded machine decides it.
                let t = try #require(closedAt, "the whole head went through: never closed")
                #expect(t >= 0.5, "closed after \(t) s")
                // Idle: answered, then closed after the idle deadline without a word.
                let idle = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                // The idle deadline starts once the answer is written, after the request is sent:
                // measured from the send, which a slow reader of the answer cannot shorten.
                let asked = Date()
                idle.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(await idle.readResponse()?.status == 200)
                #expect(await idle.closedByPeer(within: livenessGuardSeconds))
                #expect(Date().timeIntervalSince(asked) >= 0.35)
                // A connection that never sends anything: closed at the read deadline.
                let mute = try #require(RawSocket(port: server.port, source: "127.0.0.3"))
                #expect(await mute.closedByPeer(within: livenessGuardSeconds))
                #expect(server.statistics.timeouts == 3)
            }
        }

        @Test("over max connections a new one evicts a silent one; a connection being answered is never evicted; when every one is, the extra ones are closed at once")
        func maxConnections() async throws {
            var options = HTTPServerOptions()
            options.maxConnections = 3
            let gate = HTTPTestGate(open: false)
            try await withHTTPServer(options: options, gate: gate) { _, server in
                // Three connections being answered (their handler waits for the gate): none may go.
                let busy = (0..<3).compactMap { _ in RawSocket(port: server.port, source: "127.0.0.4") }
                #expect(busy.count == 3)
                for b in busy { b.send("GET /gate HTTP/1.1\r\nHost: h\r\n\r\n") }
                #expect(await eventually(10) { server.statistics.open == 3 })
                // Sent, read and handed to a handler before the extras come (an event, not a wait).
                #expect(await eventually(10) { gate.waiting == 3 })
                let extra = (0..<3).compactMap { _ in RawSocket(port: server.port, source: "127.0.0.5") }
                for e in extra { #expect(await e.closedByPeer(within: livenessGuardSeconds)) }
                #expect(server.statistics.refused == 3 && server.statistics.evicted == 0, "\(server.statistics)")
                gate.open()
                for b in busy { #expect(await b.readResponse()?.text == "hello /gate") }
                // Now they idle between requests: a new connection evicts one, and is answered.
                let client = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                client.send("GET /still HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(await client.readResponse()?.text == "hello /still")
                #expect(server.statistics.evicted == 1 && server.statistics.open == 3, "\(server.statistics)")
            }
        }

        /// `rounds` honest requests, each on a new connection: how many were answered 200.
        static func honestAnswered(_ port: UInt16, rounds: Int, path: String = "/honest") async -> Int {
            var answered = 0
            for _ in 0..<rounds {
                guard let s = RawSocket(port: port, source: "127.0.0.1") else { continue }
                s.send("GET \(path) HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
                if await s.readResponse(timeout: livenessGuardSeconds)?.status == 200 { answered += 1 }
            }
            return answered
        }

        @Test("floods of silent, idle kept-alive and slow (half a head) connections, from the honest client's own address and from 200 others, never lock the server out: every honest request is answered, the flood is evicted (counts, not times)")
        func idleFloodEvicted() async throws {
            // The default limits, but deadlines long enough that the flood stays for the whole
            // test (evicted, never timed out).
            var options = HTTPServerOptions()
            options.readTimeout = .seconds(600)
            options.idleTimeout = .seconds(600)
            try await withHTTPServer(options: options) { _, server in
                var flood: [RawSocket] = []
                // 1. Silent: 100 connections from 100 addresses, and 64 from the honest address.
                for a in 0..<100 { if let s = RawSocket(port: server.port, source: "127.0.2.\(a + 1)") { flood.append(s) } }
                for _ in 0..<64 { if let s = RawSocket(port: server.port, source: "127.0.0.1") { flood.append(s) } }
                #expect(await Self.honestAnswered(server.port, rounds: 14) == 14, "silent flood: \(server.statistics)")
                // 2. Idle kept alive: each asks once, reads its answer, then stays.
                for a in 0..<100 {
                    guard let s = RawSocket(port: server.port, source: "127.0.3.\(a + 1)") else { continue }
                    s.send("GET /once HTTP/1.1\r\nHost: h\r\n\r\n")
                    if await s.readResponse()?.status == 200 { flood.append(s) }
                }
                #expect(await Self.honestAnswered(server.port, rounds: 14) == 14, "idle flood: \(server.statistics)")
                // 3. Slow: half a request head each, then nothing.
                for a in 0..<100 {
                    guard let s = RawSocket(port: server.port, source: "127.0.4.\(a + 1)") else { continue }
                    s.send("GET /slow HTTP/1.1\r\nHost: h\r\nX-Slow: ")
                    flood.append(s)
                }
                #expect(await Self.honestAnswered(server.port, rounds: 14) == 14, "slow flood: \(server.statistics)")
                let stats = server.statistics
                print("HTTP flood: \(stats)")
                #expect(stats.open <= options.maxConnections, "\(stats)")
                // Every flood connection was accepted; at most `maxConnections` of them are still open.
                #expect(stats.evicted >= flood.count - options.maxConnections, "\(flood.count) flood connections: \(stats)")
                #expect(stats.refused == 0 && stats.timeouts == 0, "\(stats)")
                flood = []
            }
        }
    }
}
#endif
