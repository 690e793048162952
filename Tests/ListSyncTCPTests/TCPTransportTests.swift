#if canImport(Glibc)
import Foundation
import Testing
import ListSync
import ListSyncTestSupport
@testable import ListSyncTCP
import ListSyncTestTraits
import ListSyncRandom

extension SocketTests {
    @Suite("TCP transport over real sockets on 127.0.0.1", .serialized, .hangGuard)
    struct TCPTransportTests {
        @Test("frames of every size up to the limit arrive whole and in order; nothing stays open")
        func echo() async throws {
            try await withServer { loop, listener in
                let echo = echoServer(listener)
                let client = try await TCPTransport.connect(host: "127.0.0.1", port: listener.port, key: testKey,
                                                            options: clientOptions, loop: loop)
                var rng = SplitMix64(seed: 1)
                var frames = (0..<60).map { _ in rng.bytes(Int(rng.next() % 3000)) }
                frames.append([UInt8](repeating: 9, count: client.maxFrame))
                for f in frames { try await client.send(f) }
                var got: [[UInt8]] = []
                for await f in client.incoming {
                    got.append(f)
                    if got.count == frames.count { break }
                }
                #expect(got == frames)
                await #expect(throws: TransportError.frameTooLarge(size: client.maxFrame + 1, limit: client.maxFrame)) {
                    try await client.send([UInt8](repeating: 0, count: client.maxFrame + 1))
                }
                await client.close()
                await #expect(throws: TransportError.closed) { try await client.send([1]) }
                echo.cancel()
            }
        }

        @Test("IPv6 loopback works as IPv4 does")
        func ipv6() async throws {
            let loop = try EventLoop()
            defer { loop.shutdown() }
            guard let listener = try? await TCPListener.listen(host: "::1", port: 0, key: testKey, options: testOptions, loop: loop) else {
                // No IPv6 on this machine's loopback: nothing to test.
                return
            }
            let echo = echoServer(listener)
            let client = try await TCPTransport.connect(host: "::1", port: listener.port, key: testKey, options: clientOptions, loop: loop)
            try await client.send([4, 2])
            var it = client.incoming.makeAsyncIterator()
            #expect(await it.next() == [4, 2])
            await client.close()
            await listener.close()
            echo.cancel()
        }

        @Test("a wrong key fails the handshake with a clear error; an honest client still gets through")
        func wrongKey() async throws {
            try await withServer { loop, listener in
                let echo = echoServer(listener)
                await #expect(throws: TransportError.self) {
                    _ = try await TCPTransport.connect(host: "127.0.0.1", port: listener.port, key: Array(repeating: 7, count: 32),
                                                       options: clientOptions, localHost: "127.0.0.2", loop: loop)
                }
                do {
                    _ = try await TCPTransport.connect(host: "127.0.0.1", port: listener.port, key: Array(repeating: 7, count: 32),
                                                       options: clientOptions, localHost: "127.0.0.2", loop: loop)
                } catch {
                    // A typed reason: the client checks the server's proof first and fails it.
                    #expect(error as? TransportError == .handshake(.authenticationFailed), "\(error)")
                    #expect("\(error)".contains("authentication failed"))
                }
                let ok = try await honestRoundTrip(port: listener.port, loop: loop)
                #expect(ok)
                echo.cancel()
            }
        }

        @Test("nothing listening: connect fails naming the call and errno")
        func refused() async throws {
            let loop = try EventLoop()
            defer { loop.shutdown() }
            // Bind a port, then close it, so that nothing listens there.
            let l = try await TCPListener.listen(host: "127.0.0.1", port: 0, key: testKey, loop: loop)
            let port = l.port
            await l.close()
            do {
                _ = try await TCPTransport.connect(host: "127.0.0.1", port: port, key: testKey, options: testOptions, loop: loop)
                Issue.record("connected to a closed port")
            } catch {
                #expect("\(error)".contains("connect"))
            }
        }
    }
}
#endif
