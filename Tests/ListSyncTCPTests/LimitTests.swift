#if canImport(Glibc)
import Foundation
import Testing
import ListSyncTestTraits
import ListSync
import ListSyncTestSupport
@testable import ListSyncTCP

extension SocketTests {
    @Suite("Limits: slow consumers, idle peers, pings", .serialized, .hangGuard)
    struct LimitTests {
        @Test("a peer that does not read is cut off with a reason once its send queue is full")
        func slowConsumer() async throws {
            var options = testOptions
            options.sendQueueLimit = 256 * 1024
            try await withServer(options: options) { loop, listener in
                // The server pushes frames at whoever connects.
                let pusher = testTask { () -> TCPTransport? in
                    guard let t = try? await listener.acceptTCP() else { return nil }
                    let chunk = [UInt8](repeating: 1, count: 60_000)
                    for _ in 0..<2_000 {
                        do { try await t.send(chunk) } catch { break }
                        if !t.isOpen { break }
                    }
                    return t
                }
                let (raw, m, _) = try #require(await AttackTests.rawHandshake(port: listener.port, seed: 20))
                #expect(m.isEstablished)
                // Never read: the kernel buffers fill, then the server's queue.
                let server = try #require(await pusher.value)
                #expect(await eventually(5) { !server.isOpen })
                guard case let .local(reason)? = server.closeReason else {
                    Issue.record("closed for \(String(describing: server.closeReason))")
                    return
                }
                #expect(reason.contains("slow consumer"))
                _ = raw
            }
        }

        @Test("an idle connection is pinged and kept, across a stall of this process past the idle limit; a peer that stops answering is closed")
        func idle() async throws {
            var options = testOptions
            options.pingInterval = .milliseconds(100)
            options.idleTimeout = .milliseconds(1_000)
            try await withServer(options: options) { loop, listener in
                let accepted = testTask { try? await listener.acceptTCP() }
                let client = try await TCPTransport.connect(host: "127.0.0.1", port: listener.port, key: testKey, options: options, loop: loop)
                let server = try #require(await accepted.value)
                // The loop blocked for longer than the idle limit, as a suspended machine's or one
                // too busy to run this process: that time is nobody's silence, so neither side
                // closes (before the rule, both did, once the loop ran again). However busy the
                // machine, its stalls only add to this one.
                loop.execute { usleep(1_500_000) }
                try await Task.sleep(for: .milliseconds(3_000))   // and then past the limit awake: only pings kept it
                #expect(client.isOpen && server.isOpen, "pings keep a quiet but live connection open")
                // A peer that finished its handshake and then reads nothing at all.
                let acceptedMute = testTask { try? await listener.acceptTCP() }
                let (mute, m, _) = try #require(await AttackTests.rawHandshake(port: listener.port, seed: 21))
                #expect(m.isEstablished)
                let muteServer = try #require(await acceptedMute.value)
                #expect(await eventually(60) { !muteServer.isOpen })
                #expect(muteServer.closeReason?.description.contains("idle") == true)
                _ = mute
                await client.close()
                #expect(await eventually(2) { !server.isOpen })
                #expect(server.closeReason == .bye("closed"))
            }
        }
    }
}
#endif
