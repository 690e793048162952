#if canImport(Glibc)
import Foundation
import Testing
import ListSync
import ListSyncTestSupport
@testable import ListSyncTCP

/// Each attack runs from 127.0.0.2 or .3 against a real listener; it must be refused, and an
/// honest client (from 127.0.0.1) must still get its frames echoed, during and after.
extension SocketTests {
    @Suite("Attacks on the TCP listener, each refused while an honest client is served", .serialized, .timeLimit(.minutes(1)))
    struct AttackTests {
        /// An attacker's session: a client machine driven over a raw socket, so the test can send
        /// bytes no honest client would.
        static func rawHandshake(port: UInt16, key: [UInt8] = testKey, source: String = "127.0.0.2", seed: UInt64)
            async -> (RawSocket, ConnectionMachine, wire: [UInt8])? {
            guard let raw = RawSocket(port: port, source: source) else { return nil }
            var rng = TestRNG(seed: seed)
            var m = ConnectionMachine(role: .client, key: key, id: rng.bytes(16), nonce: rng.bytes(32))
            var wire: [UInt8] = []
            func run(_ actions: [ConnectionMachine.Action]) {
                for case let .write(b) in actions {
                    wire += b
                    raw.send(b)
                }
            }
            run(m.start())
            let deadline = Date().addingTimeInterval(10)
            while !m.isEstablished, !m.isClosed, Date() < deadline {
                let got = await raw.readSome(timeout: 0.5)
                if got.isEmpty { continue }
                run(m.receive(got))
            }
            return (raw, m, wire)
        }

        static func honest(_ port: UInt16, _ loop: EventLoop) async throws {
            let ok = try await honestRoundTrip(port: port, loop: loop)
            #expect(ok, "the honest client was not served")
        }

        @Test("a recorded handshake replayed is refused (its proof was for another nonce)")
        func replayedHandshake() async throws {
            try await withServer { loop, listener in
                let echo = echoServer(listener)
                let recorded = try #require(await Self.rawHandshake(port: listener.port, seed: 1))
                #expect(recorded.1.isEstablished)
                let replay = try #require(RawSocket(port: listener.port))
                replay.send(recorded.wire)
                // A fresh CHALLENGE; then, after the fixed delay, the generic error and the close.
                #expect(await replay.read(4 + 1 + Handshake.challengeSize, timeout: 10).count == 4 + 1 + Handshake.challengeSize)
                let answer = await replay.read(4 + 2, timeout: 10)
                #expect(Array(answer.suffix(2)) == [MessageType.error.rawValue, HandshakeErrorCode.authentication.rawValue])
                #expect(await replay.closedByPeer(within: 10))
                try await Self.honest(listener.port, loop)
                echo.cancel()
            }
        }

        @Test("the server's own challenge reflected back is refused without a word")
        func reflection() async throws {
            try await withServer { loop, listener in
                let echo = echoServer(listener)
                let first = try #require(RawSocket(port: listener.port))
                var rng = TestRNG(seed: 2)
                first.send(ConnectionMachine.frame(Handshake.hello(versions: 1...1, clientID: rng.bytes(16), nonce: rng.bytes(32))))
                let challenge = await first.read(4 + 1 + Handshake.challengeSize, timeout: 10)
                #expect(challenge.count == 4 + 1 + Handshake.challengeSize)
                let second = try #require(RawSocket(port: listener.port))
                second.send(challenge)
                #expect(await second.read(1, timeout: 1).isEmpty)
                #expect(await second.closedByPeer(within: 10))
                // And sent back on the first connection, where a PROOF is due.
                first.send(challenge)
                #expect(await first.closedByPeer(within: 10))
                try await Self.honest(listener.port, loop)
                echo.cancel()
            }
        }

        @Test("a sealed frame with one bit flipped closes that connection only")
        func flippedBit() async throws {
            try await withServer { loop, listener in
                let echo = echoServer(listener)
                var (raw, m, _) = try #require(await Self.rawHandshake(port: listener.port, seed: 3))
                #expect(m.isEstablished)
                var frame = try m.seal(.data, Array(repeating: 1, count: 64))
                frame[10] ^= 0x01
                raw.send(frame)
                #expect(await raw.closedByPeer(within: 10))
                try await Self.honest(listener.port, loop)
                echo.cancel()
            }
        }

        @Test("a frame replayed within a session closes that connection")
        func replayedFrame() async throws {
            try await withServer { loop, listener in
                let echo = echoServer(listener)
                var (raw, m, _) = try #require(await Self.rawHandshake(port: listener.port, seed: 4))
                let frame = try m.seal(.data, [1, 2, 3])
                raw.send(frame)
                // The echo comes back once.
                #expect(await raw.read(4 + 1 + 3 + 16, timeout: 10).count == 24)
                raw.send(frame)
                #expect(await raw.closedByPeer(within: 10))
                try await Self.honest(listener.port, loop)
                echo.cancel()
            }
        }

        @Test("a 4 GiB length prefix is refused at once, before and after the handshake")
        func hugeLength() async throws {
            try await withServer { loop, listener in
                let echo = echoServer(listener)
                let early = try #require(RawSocket(port: listener.port))
                early.send([0xff, 0xff, 0xff, 0xff])
                #expect(await early.closedByPeer(within: 10))
                let (late, m, _) = try #require(await Self.rawHandshake(port: listener.port, seed: 5))
                #expect(m.isEstablished)
                late.send([0xff, 0xff, 0xff, 0xff, 0, 0])
                #expect(await late.closedByPeer(within: 10))
                try await Self.honest(listener.port, loop)
                echo.cancel()
            }
        }

        @Test("a peer that sends one byte at a time during the handshake is cut at the deadline")
        func slowLoris() async throws {
            try await withServer { loop, listener in
                let echo = echoServer(listener)
                let slow = try #require(RawSocket(port: listener.port))
                var rng = TestRNG(seed: 6)
                let hello = ConnectionMachine.frame(Handshake.hello(versions: 1...1, clientID: rng.bytes(16), nonce: rng.bytes(32)))
                let start = Date()
                var closed = false
                for b in hello {
                    if !slow.send([b]) { closed = true; break }
                    if await slow.closedByPeer(within: 0.25) { closed = true; break }
                }
                #expect(closed)
                let elapsed = Date().timeIntervalSince(start)
                #expect(elapsed < 2.5, "closed after \(elapsed) s; the deadline is 0.8 s")
                try await Self.honest(listener.port, loop)
                echo.cancel()
            }
        }

        @Test("100 connections that never finish the handshake: refused or cut, and the honest client still gets in")
        func handshakeFlood() async throws {
            try await withServer { loop, listener in
                let echo = echoServer(listener)
                var flood: [RawSocket] = []
                for _ in 0..<100 {
                    if let s = RawSocket(port: listener.port, source: "127.0.0.3") { flood.append(s) }
                }
                // The honest client connects while the flood holds its slots.
                try await Self.honest(listener.port, loop)
                // Every flood connection is closed: most at once (limits), the rest at the deadline.
                let sockets = flood
                let deadline = Date().addingTimeInterval(5)
                var allClosed = true
                for s in sockets where !(await s.closedByPeer(within: max(0.01, deadline.timeIntervalSinceNow))) { allClosed = false }
                #expect(allClosed)
                let refused = listener.refused
                #expect(refused["too many handshakes from one address", default: 0] + refused["too many connections from one address", default: 0] >= 80,
                        "\(refused)")
                flood = []
                echo.cancel()
            }
        }

        @Test("an address that keeps failing its proof is made to wait; others are not")
        func backoff() async throws {
            try await withServer { loop, listener in
                let echo = echoServer(listener)
                for seed in 0..<4 {
                    let bad = try #require(RawSocket(port: listener.port, source: "127.0.0.4"))
                    var rng = TestRNG(seed: 100 + UInt64(seed))
                    bad.send(ConnectionMachine.frame(Handshake.hello(versions: 1...1, clientID: rng.bytes(16), nonce: rng.bytes(32))))
                    _ = await bad.read(4 + 1 + Handshake.challengeSize, timeout: 10)
                    bad.send(ConnectionMachine.frame([MessageType.proof.rawValue] + rng.bytes(32)))
                    #expect(await bad.closedByPeer(within: 10))
                }
                // Now backing off: the next connection from .4 is closed before any byte is read.
                let next = try #require(RawSocket(port: listener.port, source: "127.0.0.4"))
                #expect(await next.closedByPeer(within: 10))
                #expect(listener.refused["address backing off after failed proofs", default: 0] >= 1)
                try await Self.honest(listener.port, loop)
                echo.cancel()
            }
        }
    }
}
#endif
