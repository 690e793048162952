#if canImport(Glibc)
import Foundation
import Glibc
import ListSync
import ListSyncTestTraits
import Testing
@testable import ListSyncTCP

// The poller interface tested directly, for each implementation this system has (epoll and poll
// on Linux; kqueue is not compiled here). Every wait is bounded; the waits block, so the suite
// runs on a thread of its own (`.ownThread`).

extension SocketTests {
    @Suite("Pollers, directly: epoll and poll (kqueue is not compiled on Linux)", .serialized, .ownThread, .hangGuard)
    struct PollerTests {
        @Test("data makes a descriptor readable, and it stays readable until read (level-triggered)", arguments: PollerKind.available)
        func readableOnData(kind: PollerKind) throws {
            let p = try makePoller(kind)
            defer { p.close() }
            let (a, b) = try socketPair()
            defer { closeAll(a, b) }
            try p.add(a, .readable)
            #expect(try ready(p, timeout: 0).isEmpty)
            try put(b, [1, 2, 3])
            #expect(try ready(p) == [PollEvent(fd: a, readable: true, writable: false)])
            // Nobody read: the next wait reports it again.
            #expect(try ready(p) == [PollEvent(fd: a, readable: true, writable: false)])
            #expect(try take(a) == [1, 2, 3])
            #expect(try ready(p, timeout: 0).isEmpty)
        }

        @Test("writable interest reports room to write, on and off; a full socket is not writable until its peer reads", arguments: PollerKind.available)
        func writable(kind: PollerKind) throws {
            let p = try makePoller(kind)
            defer { p.close() }
            let (a, b) = try socketPair()
            defer { closeAll(a, b) }
            try p.add(a, [.readable, .writable])
            #expect(try ready(p) == [PollEvent(fd: a, readable: false, writable: true)])
            try p.modify(a, .readable)
            #expect(try ready(p, timeout: 0).isEmpty)
            try p.modify(a, .writable)
            #expect(try ready(p) == [PollEvent(fd: a, readable: false, writable: true)])
            try p.modify(a, [])
            #expect(try ready(p, timeout: 0).isEmpty)
            // Fill a's send buffer: no room, so not writable.
            let chunk = [UInt8](repeating: 7, count: 65_536)
            var written = 0
            while let n = try chunk.withUnsafeBytes({ b throws(TransportError) in try System.write(a, b) }) { written += n }
            #expect(written > 0)
            try p.modify(a, .writable)
            #expect(try ready(p, timeout: 50).isEmpty)
            // The peer reads everything: room again.
            var drained = 0
            while drained < written { drained += try take(b).count }
            #expect(try ready(p) == [PollEvent(fd: a, readable: false, writable: true)])
        }

        @Test("the peer's close comes as readable and the read returns end of stream, with or without interest", arguments: PollerKind.available)
        func hangUp(kind: PollerKind) throws {
            let p = try makePoller(kind)
            defer { p.close() }
            let (a, b) = try socketPair()
            defer { System.close(a) }
            try p.add(a, .readable)
            System.close(b)
            #expect(try ready(p) == [PollEvent(fd: a, readable: true, writable: false)])
            #expect(try take(a) == [])
            // epoll and poll report a hang-up even to a descriptor watched for nothing (kqueue
            // would not: its filters are disabled; see KqueuePoller).
            try p.modify(a, [])
            #expect(try ready(p).map(\.fd) == [a])
            #expect(try ready(p).allSatisfy(\.readable))
        }

        @Test("a non-blocking connect ends as writable; a reset comes as readable and the read fails with ECONNRESET", arguments: PollerKind.available)
        func connectAndReset(kind: PollerKind) throws {
            let p = try makePoller(kind)
            defer { p.close() }
            let (listenFD, address) = try System.listeningSocket(host: "127.0.0.1", port: 0, backlog: 8)
            defer { System.close(listenFD) }
            let client = try System.socket(family: address.family)
            defer { System.close(client) }
            try p.add(listenFD, .readable)
            try p.add(client, [.readable, .writable])
            let connectedAtOnce = try System.connect(client, address)
            var sawWritable = connectedAtOnce, sawAccept = false
            let deadline = Date().addingTimeInterval(livenessGuardSeconds)
            while !(sawWritable && sawAccept), Date() < deadline {
                for e in try ready(p) {
                    if e.fd == client, e.writable { sawWritable = true }
                    if e.fd == listenFD, e.readable { sawAccept = true }
                }
            }
            #expect(sawWritable && sawAccept)
            #expect(try System.socketError(client) == 0)
            let (server, _) = try #require(try System.accept(listenFD))
            try p.modify(client, .readable)
            #expect(try ready(p, timeout: 0).isEmpty)
            System.setResetOnClose(server)
            System.close(server)
            let events = try ready(p)
            #expect(events.map(\.fd) == [client] && events.allSatisfy(\.readable))
            #expect(throws: TransportError.system(call: "read", errno: ECONNRESET)) { try take(client) }
        }

        @Test("a connect refused comes as writable and readable, and SO_ERROR says ECONNREFUSED", arguments: PollerKind.available)
        func connectRefused(kind: PollerKind) throws {
            let p = try makePoller(kind)
            defer { p.close() }
            // A port nobody listens on: bind one, close it.
            let (probe, address) = try System.listeningSocket(host: "127.0.0.1", port: 0, backlog: 1)
            System.close(probe)
            let client = try System.socket(family: address.family)
            defer { System.close(client) }
            try p.add(client, [.readable, .writable])
            if try System.connect(client, address) { Issue.record("connected to a closed port"); return }
            let events = try ready(p)
            #expect(events.map(\.fd) == [client])
            #expect(events.allSatisfy { $0.readable && $0.writable })
            #expect(try System.socketError(client) == ECONNREFUSED)
        }

        @Test("a removed descriptor is not reported; removing twice is nothing; add twice and modify unknown fail", arguments: PollerKind.available)
        func removal(kind: PollerKind) throws {
            let p = try makePoller(kind)
            defer { p.close() }
            let (a, b) = try socketPair()
            defer { closeAll(a, b) }
            try p.add(a, .readable)
            #expect(throws: TransportError.self) { try p.add(a, .readable) }
            p.remove(a)
            p.remove(a)
            try put(b, [9])
            #expect(try ready(p, timeout: 50).isEmpty)
            #expect(throws: TransportError.self) { try p.modify(a, .readable) }
            // Added again, it is reported again.
            try p.add(a, .readable)
            #expect(try ready(p) == [PollEvent(fd: a, readable: true, writable: false)])
        }

        @Test("wake() from another thread ends a long wait; wake-ups coalesce and are not reported", arguments: PollerKind.available)
        func wake(kind: PollerKind) throws {
            let p = try makePoller(kind)
            defer { p.close() }
            let box = WakeBox(p)
            let thread = Thread {
                Thread.sleep(forTimeInterval: 0.1)
                box.poller.wake()
            }
            thread.start()
            let start = Date()
            // The timeout is 10 minutes: a wait the wake-up did not end lasts it (the bounds are
            // the wake-up's, or its absence's, not the machine's speed).
            #expect(try ready(p, timeout: 600_000).isEmpty)
            let waited = Date().timeIntervalSince(start)
            #expect(waited >= 0.05 && waited < 300, "waited \(waited) s")
            // Many wake-ups before a wait: one return, nothing left for the next.
            for _ in 0..<1000 { p.wake() }
            let again = Date()
            #expect(try ready(p, timeout: 600_000).isEmpty)
            #expect(Date().timeIntervalSince(again) < 300)
            #expect(try ready(p, timeout: 0).isEmpty)
            let t0 = Date()
            _ = try ready(p, timeout: 60)
            #expect(Date().timeIntervalSince(t0) >= 0.05, "a consumed wake-up woke the next wait")
        }

        @Test("200 socket pairs: exactly the ready ones are reported, before and after removing half", arguments: PollerKind.available)
        func manyDescriptors(kind: PollerKind) throws {
            let p = try makePoller(kind)
            defer { p.close() }
            var pairs: [(Int32, Int32)] = []
            defer { for (a, b) in pairs { closeAll(a, b) } }
            for _ in 0..<200 { pairs.append(try socketPair()) }
            for (a, _) in pairs { try p.add(a, .readable) }
            #expect(try ready(p, timeout: 0).isEmpty)
            for (i, (_, b)) in pairs.enumerated() where i % 3 == 0 { try put(b, [UInt8(i % 256)]) }
            let first = try ready(p)
            #expect(Set(first.map(\.fd)) == Set(pairs.enumerated().filter { $0.offset % 3 == 0 }.map(\.element.0)))
            #expect(first.count == 67 && first.allSatisfy { $0.readable && !$0.writable })
            for (i, (a, _)) in pairs.enumerated() where i % 3 == 0 { #expect(try take(a) == [UInt8(i % 256)]) }
            for (i, (a, _)) in pairs.enumerated() where i % 2 == 0 { p.remove(a) }
            for (_, b) in pairs { try put(b, [1]) }
            let second = try ready(p)
            #expect(Set(second.map(\.fd)) == Set(pairs.enumerated().filter { $0.offset % 2 == 1 }.map(\.element.0)))
            #expect(second.count == 100)
            // Writable interest on every remaining one.
            for (i, (a, _)) in pairs.enumerated() where i % 2 == 1 { try p.modify(a, [.readable, .writable]) }
            let third = try ready(p)
            #expect(third.count == 100 && third.allSatisfy { $0.readable && $0.writable })
        }

        @Test("a wait with nothing ready lasts its timeout (the loop's timers rely on it)", arguments: PollerKind.available)
        func timeout(kind: PollerKind) throws {
            let p = try makePoller(kind)
            defer { p.close() }
            let (a, b) = try socketPair()
            defer { closeAll(a, b) }
            try p.add(a, .readable)
            let start = Date()
            #expect(try ready(p, timeout: 120).isEmpty)
            let waited = Date().timeIntervalSince(start)
            // At least its timeout; the upper bound only catches a wait that never ends.
            #expect(waited >= 0.11 && waited < 120, "waited \(waited) s")
        }
    }
}

/// Carries a poller to another thread, for `wake()` only.
private final class WakeBox: @unchecked Sendable {
    // @unchecked Sendable: the other thread calls only `wake()`, which every poller allows from
    // any thread (Poller's contract); the test's thread does the rest.
    let poller: any Poller
    init(_ poller: any Poller) { self.poller = poller }
}

/// A connected pair of non-blocking Unix stream sockets.
func socketPair() throws -> (Int32, Int32) {
    var fds: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw TestFailure("socketpair: errno \(errno)") }
    try System.setNonBlocking(fds[0])
    try System.setNonBlocking(fds[1])
    return (fds[0], fds[1])
}

func closeAll(_ fds: Int32...) { for fd in fds { System.close(fd) } }

/// Writes all of `bytes` (small: they fit in the socket's buffer).
func put(_ fd: Int32, _ bytes: [UInt8]) throws {
    let n = try bytes.withUnsafeBytes { b throws(TransportError) in try System.write(fd, b) }
    guard n == bytes.count else { throw TestFailure("wrote \(n.map(String.init) ?? "nothing") of \(bytes.count) bytes") }
}

/// Reads what is there (up to 256 KiB): `[]` at end of stream; throws if nothing is there.
func take(_ fd: Int32) throws -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: 1 << 18)
    guard let n = try buffer.withUnsafeMutableBytes({ b throws(TransportError) in try System.read(fd, b) }) else {
        throw TestFailure("nothing to read on \(fd)")
    }
    return Array(buffer[0..<n])
}

/// One wait (default: up to 5 s): the events, sorted by descriptor.
private func ready(_ p: any Poller, timeout: Int32 = 5_000) throws -> [PollEvent] {
    var events: [PollEvent] = []
    try p.wait(timeout: timeout, into: &events)
    return events.sorted { $0.fd < $1.fd }
}
#endif
