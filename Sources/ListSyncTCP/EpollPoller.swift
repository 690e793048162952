#if os(Linux)
import CListSyncLinux
#if canImport(Glibc)
import Glibc
#endif
import ListSyncTransport

/// The Linux poller: epoll(7), level-triggered, with an eventfd for wake-ups. The default on
/// Linux (`LISTSYNC_POLLER=epoll`).
///
/// Readable interest is `EPOLLIN | EPOLLRDHUP`; `EPOLLHUP` and `EPOLLERR`, which epoll reports
/// whatever the interest, are reported as readable (the next read says which). At most 256
/// descriptors are reported by one wait; the rest come at the next.
final class EpollPoller: Poller {
    let kind = PollerKind.epoll
    private let epollFD: Int32
    private let wakeFD: Int32
    private var buffer = [epoll_event](repeating: epoll_event(), count: 256)

    /// A new epoll instance and its eventfd, both close-on-exec.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` naming `epoll_create1`, `eventfd` or `epoll_ctl`.
    init() throws(TransportError) {
        let epollFD = try System.call("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        let wakeFD: Int32
        do {
            wakeFD = try System.call("eventfd") { eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)) }
            try Self.control(epollFD, EPOLL_CTL_ADD, "epoll_ctl(ADD)", wakeFD, EPOLLIN.rawValue)
        } catch {
            System.close(epollFD)
            throw error
        }
        self.epollFD = epollFD
        self.wakeFD = wakeFD
    }

    func add(_ fd: Int32, _ interest: PollInterest) throws(TransportError) {
        try Self.control(epollFD, EPOLL_CTL_ADD, "epoll_ctl(ADD)", fd, Self.events(interest))
    }

    func modify(_ fd: Int32, _ interest: PollInterest) throws(TransportError) {
        try Self.control(epollFD, EPOLL_CTL_MOD, "epoll_ctl(MOD)", fd, Self.events(interest))
    }

    func remove(_ fd: Int32) {
        var ev = epoll_event()
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &ev)
    }

    func wait(timeout: Int32, into events: inout [PollEvent]) throws(TransportError) {
        events.removeAll(keepingCapacity: true)
        let n = try System.waitCall("epoll_wait") {
            buffer.withUnsafeMutableBufferPointer { epoll_wait(epollFD, $0.baseAddress, Int32($0.count), timeout) }
        }
        for i in 0..<Int(n) {
            let fd = buffer[i].data.fd
            let flags = buffer[i].events
            if fd == wakeFD {
                drainWake()
                continue
            }
            events.append(PollEvent(
                fd: fd,
                readable: flags & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0,
                writable: flags & EPOLLOUT.rawValue != 0))
        }
    }

    func wake() {
        var one: UInt64 = 1
        // EAGAIN: the counter is at its maximum, a wake-up is pending anyway. Any other error is
        // a closed eventfd (after close()), where no wait is left to wake.
        _ = try? withUnsafeBytes(of: &one) { b throws(TransportError) in try System.writeDescriptor(wakeFD, b) }
    }

    func close() {
        System.close(wakeFD)
        System.close(epollFD)
    }

    // MARK: Internals

    private func drainWake() {
        var value: UInt64 = 0
        // One read resets the counter; EAGAIN (nothing to read) is not an error.
        _ = try? withUnsafeMutableBytes(of: &value) { b throws(TransportError) in try System.read(wakeFD, b) }
    }

    private static func events(_ interest: PollInterest) -> UInt32 {
        (interest.contains(.readable) ? EPOLLIN.rawValue | EPOLLRDHUP.rawValue : 0)
            | (interest.contains(.writable) ? EPOLLOUT.rawValue : 0)
    }

    private static func control(_ epollFD: Int32, _ op: Int32, _ name: StaticString, _ fd: Int32, _ events: UInt32) throws(TransportError) {
        var ev = epoll_event()
        ev.events = events
        ev.data.fd = fd
        _ = try System.call(name) { epoll_ctl(epollFD, op, fd, &ev) }
    }
}
#endif
