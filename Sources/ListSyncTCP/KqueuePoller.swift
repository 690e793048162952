#if canImport(Darwin) || os(FreeBSD) || os(OpenBSD)
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif
import ListSyncTransport

/// The poller of macOS, iOS and the BSDs: kqueue(2), level-triggered (no `EV_CLEAR`), with a
/// ``SelfPipe`` for wake-ups. The default there (`LISTSYNC_POLLER=kqueue`).
///
/// NOT COMPILED AND NOT RUN on the Linux machine this package is developed and tested on (it has
/// no kqueue): it is kept small and mirrors ``EpollPoller`` line for line, and the only wake-up
/// code it has, the self-pipe, is the poll poller's, which is tested on Linux. Build and run the
/// socket suites on a Mac before relying on it (`Docs/Transport.md`, "Pollers").
///
/// Each descriptor has two filters, `EVFILT_READ` and `EVFILT_WRITE`, both added at once and
/// switched with `EV_ENABLE` / `EV_DISABLE` (epoll's interest mask). kqueue reports end of stream
/// and errors only through an enabled filter (`EV_EOF`, `EV_ERROR`): they are reported as
/// readable, as epoll's `EPOLLHUP` and `EPOLLERR` are, but a descriptor watched for nothing hears
/// nothing (epoll and poll would still report its hang-up). A descriptor ready both ways comes as
/// two ``PollEvent``s, one per filter. At most 256 events come from one wait.
final class KqueuePoller: Poller {
    let kind = PollerKind.kqueue
    private let queueFD: Int32
    private let wakePipe: SelfPipe
    private var buffer = [kevent](repeating: kevent(), count: 256)

    /// A new kqueue (close-on-exec) and its wake pipe.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` naming `kqueue`, `fcntl`, `pipe` or `kevent`.
    init() throws(TransportError) {
        let queueFD = try System.call("kqueue") { kqueue() }
        let wakePipe: SelfPipe
        do {
            _ = try System.call("fcntl(F_SETFD)") { fcntl(queueFD, F_SETFD, FD_CLOEXEC) }
            wakePipe = try SelfPipe()
        } catch {
            System.close(queueFD)
            throw error
        }
        do {
            try Self.apply(queueFD, "kevent(ADD)", [Self.change(wakePipe.readFD, EVFILT_READ, EV_ADD | EV_ENABLE)])
        } catch {
            wakePipe.close()
            System.close(queueFD)
            throw error
        }
        self.queueFD = queueFD
        self.wakePipe = wakePipe
    }

    func add(_ fd: Int32, _ interest: PollInterest) throws(TransportError) {
        try Self.apply(queueFD, "kevent(ADD)", Self.changes(fd, interest))
    }

    func modify(_ fd: Int32, _ interest: PollInterest) throws(TransportError) {
        try Self.apply(queueFD, "kevent(MOD)", Self.changes(fd, interest))
    }

    func remove(_ fd: Int32) {
        let changes = [Self.change(fd, EVFILT_READ, EV_DELETE), Self.change(fd, EVFILT_WRITE, EV_DELETE)]
        _ = Self.submit(queueFD, changes, nil, 0, nil)
    }

    func wait(timeout: Int32, into events: inout [PollEvent]) throws(TransportError) {
        events.removeAll(keepingCapacity: true)
        var limit = timespec(tv_sec: Int(timeout / 1000), tv_nsec: Int(timeout % 1000) * 1_000_000)
        let n = try System.waitCall("kevent") {
            buffer.withUnsafeMutableBufferPointer { b in
                timeout < 0 ? Self.submit(queueFD, [], b.baseAddress, Int32(b.count), nil)
                    : Self.submit(queueFD, [], b.baseAddress, Int32(b.count), &limit)
            }
        }
        for i in 0..<Int(n) {
            let fd = Int32(truncatingIfNeeded: buffer[i].ident)
            let filter = Int32(buffer[i].filter)
            let flags = Int32(buffer[i].flags)
            if fd == wakePipe.readFD && filter == EVFILT_READ {
                wakePipe.drain()
                continue
            }
            events.append(PollEvent(
                fd: fd,
                readable: filter == EVFILT_READ || flags & (EV_EOF | EV_ERROR) != 0,
                writable: filter == EVFILT_WRITE))
        }
    }

    func wake() { wakePipe.wake() }

    func close() {
        wakePipe.close()
        System.close(queueFD)
    }

    // MARK: Internals

    /// Both filters of `fd` added (or updated), each enabled or disabled as `interest` says.
    private static func changes(_ fd: Int32, _ interest: PollInterest) -> [kevent] {
        [change(fd, EVFILT_READ, EV_ADD | (interest.contains(.readable) ? EV_ENABLE : EV_DISABLE)),
         change(fd, EVFILT_WRITE, EV_ADD | (interest.contains(.writable) ? EV_ENABLE : EV_DISABLE))]
    }

    private static func change(_ fd: Int32, _ filter: Int32, _ flags: Int32) -> kevent {
        var ev = kevent()
        ev.ident = UInt(fd)
        ev.filter = Int16(truncatingIfNeeded: filter)
        ev.flags = UInt16(truncatingIfNeeded: flags)
        return ev
    }

    private static func apply(_ queueFD: Int32, _ name: StaticString, _ changes: [kevent]) throws(TransportError) {
        _ = try System.call(name) { submit(queueFD, changes, nil, 0, nil) }
    }

    /// kevent(2): applies `changes`, then waits for at most `capacity` events into `out`.
    private static func submit(_ queueFD: Int32, _ changes: [kevent], _ out: UnsafeMutablePointer<kevent>?,
                               _ capacity: Int32, _ timeout: UnsafePointer<timespec>?) -> Int32 {
        changes.withUnsafeBufferPointer { c in
            #if canImport(Darwin)
            Darwin.kevent(queueFD, c.baseAddress, Int32(c.count), out, capacity, timeout)
            #elseif canImport(Glibc)
            Glibc.kevent(queueFD, c.baseAddress, Int32(c.count), out, capacity, timeout)
            #endif
        }
    }
}
#endif
