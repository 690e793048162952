import Foundation
import Testing
import ListSyncNATS
import ListSyncTCP
import ListSyncTransport
import ListSyncTestSupport
import ListSyncTestTraits

/// The client against a real `nats-server` on 127.0.0.x (started and stopped by each test).
/// Skipped where no `nats-server` is installed, except under CI=true (`.ci/run` installs it).
@Suite(.serialized, .ownThread, .enabled(if: NATSServerProcess.available, "nats-server is not installed"))
struct NATSLiveTests {
    func options() -> NATSOptions {
        var o = NATSOptions()
        o.requestTimeout = .seconds(20)
        o.connectTimeout = .seconds(10)
        return o
    }

    @Test func publishSubscribeRequestAndFlush() async throws {
        let server = try NATSServerProcess(host: "127.0.0.2")
        defer { server.remove() }
        let a = try await NATSConnection.connect(to: [NATSServerAddress(host: "127.0.0.2", port: server.port)], options: options())
        let b = try await NATSConnection.connect(to: [NATSServerAddress(host: "127.0.0.2", port: server.port)], options: options())
        let sub = try await b.subscribe("t.>")
        let echo = try await b.subscribe("svc.echo")
        try await b.flush()
        try await a.publish("t.one", payload: Array("1".utf8))
        try await a.publish("t.two", headers: NATSHeaders([("K", "v")]), payload: Array("2".utf8))
        var it = sub.messages.makeAsyncIterator()
        let m1 = await it.next(), m2 = await it.next()
        #expect(m1?.subject == "t.one" && m1?.payload == Array("1".utf8))
        #expect(m2?.subject == "t.two" && m2?.headers?["K"] == "v")
        let server2 = testTask {
            for await m in echo.messages {
                if let r = m.replyTo { try? await b.publish(r, payload: m.payload + Array("!".utf8)) }
            }
        }
        let answer = try await a.request("svc.echo", payload: Array("hi".utf8), timeout: .seconds(20))
        #expect(answer.payload == Array("hi!".utf8))
        await #expect(throws: NATSError.noResponders("svc.none")) { _ = try await a.request("svc.none", payload: []) }
        await #expect(throws: NATSError.self) { try await a.publish("bad subject", payload: []) }
        try await a.flush()
        await a.close()
        await #expect(throws: NATSError.closed) { try await a.publish("t.x", payload: []) }
        await b.close()
        _ = await server2.value
    }

    @Test func reconnectsAndSubscribesAgainAfterTheServerRestarts() async throws {
        let server = try NATSServerProcess(host: "127.0.0.3")
        defer { server.remove() }
        var o = options()
        o.reconnectBackoff = Backoff(initial: .milliseconds(50), maximum: .milliseconds(300))
        let address = NATSServerAddress(host: "127.0.0.3", port: server.port)
        let sub = try await NATSConnection.connect(to: [address], options: o)
        let pub = try await NATSConnection.connect(to: [address], options: o)
        let s = try await sub.subscribe("r.x")
        try await sub.flush()
        server.stop()
        // Both notice (the socket closes) and retry until the server is back.
        let deadline = Date().addingTimeInterval(20)
        while await sub.isConnected, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(await !sub.isConnected)
        try server.restart()
        func both() async -> Bool {
            let a = await sub.isConnected
            let b = await pub.isConnected
            return a && b
        }
        while await !both(), Date() < deadline.addingTimeInterval(20) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(sub.reconnections == 1 && pub.reconnections == 1)
        try await sub.flush(timeout: .seconds(20))
        try await pub.publish("r.x", payload: Array("after".utf8))
        var it = s.messages.makeAsyncIterator()
        #expect(await it.next()?.payload == Array("after".utf8))
        await sub.close()
        await pub.close()
    }

    @Test func connectFailsWithEveryServersReason() async throws {
        let server = try NATSServerProcess(host: "127.0.0.4")
        let port = server.port
        server.remove()
        await #expect(throws: NATSError.self) {
            _ = try await NATSConnection.connect(to: [NATSServerAddress(host: "127.0.0.4", port: port), NATSServerAddress(host: "127.0.0.4", port: port)])
        }
    }
}
