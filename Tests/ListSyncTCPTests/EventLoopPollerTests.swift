#if canImport(Glibc)
import Foundation
import Glibc
import ListSync
import Synchronization
import Testing
@testable import ListSyncTCP
import ListSyncTestTraits

// The event loop on each poller this system has: the same callbacks, timers, wake-ups and
// shutdown whichever waits underneath. (The socket suites run on whichever poller
// `LISTSYNC_POLLER` names; CI runs them on both, see README "Testing".)

extension SocketTests {
    @Suite("EventLoop on each poller", .serialized, .hangGuard)
    struct EventLoopPollerTests {
        @Test("choosing a poller: the default, by name, unknown and unavailable names are typed errors naming the choices")
        func choosing() throws {
            #expect(PollerKind.platformDefault == .epoll)
            #expect(PollerKind.available == [.epoll, .poll])
            #expect(try PollerKind.named(nil) == .epoll)
            #expect(try PollerKind.named("") == .epoll)
            #expect(try PollerKind.named("poll") == .poll)
            #expect(try PollerKind.named(" EPOLL ") == .epoll)
            #expect(throws: EventLoopError.unknownPoller("select", available: [.epoll, .poll])) { try PollerKind.named("select") }
            #expect(throws: EventLoopError.unavailablePoller(.kqueue, available: [.epoll, .poll])) { try PollerKind.named("kqueue") }
            let text = EventLoopError.unknownPoller("select", available: [.epoll, .poll]).description
            #expect(text.contains("LISTSYNC_POLLER=select") && text.contains("epoll, poll"))
            #expect(EventLoopError.unavailablePoller(.kqueue, available: [.epoll, .poll]).description.contains("kqueue"))
            #expect(throws: EventLoopError.unavailablePoller(.kqueue, available: [.epoll, .poll])) { try EventLoop(poller: .kqueue) }
            // What this process runs on (the CI's second pass sets LISTSYNC_POLLER=poll).
            let expected = try PollerKind.named(ProcessInfo.processInfo.environment["LISTSYNC_POLLER"])
            #expect(EventLoop.shared.pollerKind == expected)
        }

        @Test("readable and writable callbacks, setWritable, setInterest, deregister", arguments: PollerKind.available)
        func callbacks(kind: PollerKind) async throws {
            try await withLoop(kind) { loop in try await callbacks(loop) }
        }

        private func callbacks(_ loop: EventLoop) async throws {
            let (a, b) = try socketPair()
            var bOpen = true
            defer { if bOpen { System.close(b) } }
            let handler = Recorder(fd: a)
            try await onLoop(loop) { () throws(TransportError) in try loop.register(a, handler, writable: false) }
            #expect(await loop.registeredDescriptors() == 1)
            try put(b, [1, 2])
            #expect(await eventually(5) { handler.received == [1, 2] })
            #expect(handler.writes == 0)
            // Writability on: reported (level-triggered: again and again) until turned off.
            try await onLoop(loop) { loop.setWritable(a, true) }
            #expect(await eventually(5) { handler.writes >= 2 })
            try await onLoop(loop) { loop.setWritable(a, false) }
            let writes = handler.writes
            try await Task.sleep(for: .milliseconds(50))
            #expect(handler.writes == writes)
            // Interest off: data waits; on again: it is read.
            try await onLoop(loop) { loop.setInterest(a, readable: false, writable: false) }
            try put(b, [3])
            try await Task.sleep(for: .milliseconds(50))
            #expect(handler.received == [1, 2])
            try await onLoop(loop) { loop.setInterest(a, readable: true, writable: false) }
            #expect(await eventually(5) { handler.received == [1, 2, 3] })
            // The peer's close: delivered as readable, the read sees end of stream.
            System.close(b)
            bOpen = false
            #expect(await eventually(5) { handler.ended })
            try await onLoop(loop) { loop.deregister(a); System.close(a) }
            #expect(await loop.registeredDescriptors() == 0)
        }

        @Test("timers fire in deadline order, cancelled ones never; execute from many threads runs every task", arguments: PollerKind.available)
        func timersAndExecute(kind: PollerKind) async throws {
            try await withLoop(kind) { loop in try await timersAndExecute(loop) }
        }

        private func timersAndExecute(_ loop: EventLoop) async throws {
            let fired = Mutex<[Int]>([])
            try await onLoop(loop) {
                for ms in [60, 20, 40, 80] {
                    let id = loop.schedule(after: .milliseconds(ms)) { fired.withLock { $0.append(ms) } }
                    if ms == 40 { loop.cancel(id) }
                }
            }
            #expect(await eventually(5) { fired.withLock { $0.count } == 3 })
            try await Task.sleep(for: .milliseconds(100))
            #expect(fired.withLock { $0 } == [20, 60, 80])
            // Every thread's tasks run, each once (each wakes the loop when the queue was empty).
            let count = Mutex(0)
            let threads = (0..<8).map { _ in
                Thread { for _ in 0..<1000 { loop.execute { count.withLock { $0 += 1 } } } }
            }
            for t in threads { t.start() }
            #expect(await eventually(10) { count.withLock { $0 } == 8000 })
        }

        @Test("shutdown closes the descriptors still registered", arguments: PollerKind.available)
        func shutdownCloses(kind: PollerKind) async throws {
            let loop = try EventLoop(poller: kind)
            let (a, b) = try socketPair()
            defer { System.close(b) }
            let handler = Recorder(fd: a)
            try await onLoop(loop) { () throws(TransportError) in try loop.register(a, handler, writable: false) }
            await offLoopShutdown(loop)
            // a was closed by the loop: its peer reads end of stream.
            var p = pollfd(fd: b, events: Int16(POLLIN), revents: 0)
            #expect(poll(&p, 1, 5_000) == 1)
            #expect(try take(b) == [])
        }

        @Test("execute from four threads racing shutdown, 50 loops: every shutdown returns, nothing crashes, the wake-ups end before the poller closes", arguments: PollerKind.available)
        func executeRacingShutdown(kind: PollerKind) async throws {
            for _ in 0..<50 {
                let loop = try EventLoop(poller: kind)
                let ran = Atomic<Int>(0)
                let stop = Atomic<Bool>(false)
                let done = DispatchGroup()
                for _ in 0..<4 {
                    done.enter()
                    Thread {
                        // Wake-ups before, during and after the shutdown (those after are dropped).
                        while !stop.load(ordering: .relaxed) { loop.execute { ran.add(1, ordering: .relaxed) } }
                        done.leave()
                    }.start()
                }
                while ran.load(ordering: .relaxed) == 0 { usleep(100) }
                await offLoopShutdown(loop)
                stop.store(true, ordering: .relaxed)
                done.wait()
                #expect(ran.load(ordering: .relaxed) > 0)
            }
        }

        @Test("TCP: a listener and clients on a loop of each poller exchange frames, and nothing stays open", arguments: PollerKind.available)
        func tcpRoundTrip(kind: PollerKind) async throws {
            try await withLoop(kind) { loop in
                let listener = try await TCPListener.listen(host: "127.0.0.1", port: 0, key: testKey, options: testOptions, loop: loop)
                let echo = echoServer(listener)
                for _ in 0..<5 { #expect(try await honestRoundTrip(port: listener.port, loop: loop)) }
                await listener.close()
                await echo.value
                #expect(await eventually(3) { await loop.registeredDescriptors() == 0 })
            }
        }
    }
}

/// Runs `body` with a new loop on `kind`, then shuts the loop down (off the pool), thrown or not.
private func withLoop(_ kind: PollerKind, _ body: (EventLoop) async throws -> Void) async throws {
    let loop = try EventLoop(poller: kind)
    #expect(loop.pollerKind == kind)
    do { try await body(loop) } catch {
        await offLoopShutdown(loop)
        throw error
    }
    await offLoopShutdown(loop)
}

/// Runs `body` on the loop's thread and waits for it.
private func onLoop(_ loop: EventLoop, _ body: @escaping @Sendable () throws(TransportError) -> Void) async throws(TransportError) {
    let result: Result<Void, TransportError> = await withCheckedContinuation { c in
        loop.execute { c.resume(returning: Result { () throws(TransportError) in try body() }) }
    }
    try result.get()
}

/// `shutdown()` waits for the loop's thread: done on a thread of its own, not the pool's.
private func offLoopShutdown(_ loop: EventLoop) async {
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
        Thread {
            loop.shutdown()
            c.resume()
        }.start()
    }
}

/// Records what the loop tells about one descriptor, reading what is there.
private final class Recorder: EventHandler, @unchecked Sendable {
    // @unchecked Sendable: the callbacks run on the loop's thread; what they record is behind a
    // Mutex, read by the test.
    let fd: Int32
    private let state = Mutex<(received: [UInt8], writes: Int, ended: Bool)>(([], 0, false))
    init(fd: Int32) { self.fd = fd }

    var received: [UInt8] { state.withLock { $0.received } }
    var writes: Int { state.withLock { $0.writes } }
    var ended: Bool { state.withLock { $0.ended } }

    func readable() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n: Int?
            do { n = try buffer.withUnsafeMutableBytes { b throws(TransportError) in try System.read(fd, b) } } catch {
                state.withLock { $0.ended = true }
                return
            }
            guard let n else { return }
            if n == 0 {
                state.withLock { $0.ended = true }
                return
            }
            state.withLock { $0.received += buffer[0..<n] }
        }
    }

    func writable() { state.withLock { $0.writes += 1 } }
}
#endif
