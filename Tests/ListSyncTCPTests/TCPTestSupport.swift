#if canImport(Glibc)
import Foundation
import ListSync
import ListSyncTestSupport
import Testing
import ListSyncTestTraits
@testable import ListSyncTCP

/// Every suite that opens sockets, one at a time: their descriptor counts must not mix.
@Suite("Sockets (one suite at a time)", .serialized) struct SocketTests {}

/// Options for tests: short deadlines so that attacks end quickly.
let testOptions: TCPOptions = {
    var o = TCPOptions()
    o.handshakeTimeout = .milliseconds(800)
    o.authenticationFailureDelay = .milliseconds(100)
    return o
}()

/// Options for an honest client of such a listener: a handshake deadline as long as the liveness
/// guard, so that a loaded machine never fails an honest handshake on the client's own clock (the
/// listener's short deadline may cut it, and `connect` tries again then).
let clientOptions: TCPOptions = {
    var o = testOptions
    o.handshakeTimeout = .seconds(Int64(livenessGuardSeconds))
    return o
}()

let testKey: [UInt8] = Array(100..<132)

/// Runs `body` with a fresh event loop and a listener on 127.0.0.1 (any port), then closes both;
/// checks that every socket the loop drove is closed again (no descriptor left registered).
func withServer(options: TCPOptions = testOptions, key: [UInt8] = testKey,
                _ body: (EventLoop, TCPListener) async throws -> Void) async throws {
    let loop = try EventLoop()
    let listener = try await TCPListener.listen(host: "127.0.0.1", port: 0, key: key, options: options, loop: loop)
    do {
        try await body(loop, listener)
    } catch {
        await listener.close()
        loop.shutdown()
        throw error
    }
    await listener.close()
    // Connections the server handed out close as their peers go: give them a moment.
    _ = await eventually(3) { await loop.registeredDescriptors() == 0 }
    let left = await loop.registeredDescriptors()
    loop.shutdown()
    if left != 0 {
        throw TestFailure("\(left) socket(s) still open on the loop after the test")
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Waits until `condition` holds: `seconds` is the time expected, but the wait lasts at least
/// ``livenessGuardSeconds``, a guard against a hang and never the verdict (Docs/Reliability.md,
/// "Tests on a busy machine").
func eventually(_ seconds: Double = 10, _ condition: @Sendable () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(max(seconds, livenessGuardSeconds))
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: 2_000_000)
    }
    return await condition()
}

/// Accepts connections and echoes every frame back, until the listener closes.
func echoServer(_ listener: TCPListener) -> Task<Void, Never> {
    testTask {
        await withTaskGroup(of: Void.self) { group in
            while let t = try? await listener.acceptTCP() {
                group.addTask {
                    for await frame in t.incoming { try? await t.send(frame) }
                    await t.close()
                }
            }
            group.cancelAll()
        }
    }
}

/// An honest client's round trip: connects, sends three frames, reads them back.
func honestRoundTrip(port: UInt16, loop: EventLoop) async throws -> Bool {
    let client = try await TCPTransport.connect(host: "127.0.0.1", port: port, key: testKey, options: clientOptions, loop: loop)
    let frames: [[UInt8]] = [[1], Array(repeating: 2, count: 1000), [3, 3]]
    for f in frames { try await client.send(f) }
    var got: [[UInt8]] = []
    for await f in client.incoming {
        got.append(f)
        if got.count == frames.count { break }
    }
    await client.close()
    return got == frames
}
#endif
