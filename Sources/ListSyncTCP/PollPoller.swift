#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ListSyncTransport

/// The portable poller: poll(2), which every POSIX system has, with a ``SelfPipe`` for wake-ups
/// (`LISTSYNC_POLLER=poll`; the default only where neither epoll nor kqueue exists).
///
/// It keeps one array of `pollfd`, patched in place by ``add(_:_:)``, ``modify(_:_:)`` and
/// ``remove(_:)`` (O(1) each, a removal moves the last entry into the hole), and hands the whole
/// array to the kernel at every wait: each ``wait(timeout:into:)`` is O(registered descriptors),
/// in the kernel and in the scan of the results. Fine for the hundreds of sockets of a device or
/// a test; a daemon with many thousands of connections wants epoll or kqueue.
///
/// Readable interest is `POLLIN` (end of stream is `POLLIN` too); `POLLHUP`, `POLLERR` and
/// `POLLNVAL`, which poll reports whatever the interest, are reported as readable, as with epoll.
final class PollPoller: Poller {
    let kind = PollerKind.poll
    private let wakePipe: SelfPipe
    /// Entry 0 is the wake pipe's read end; then one entry per registered descriptor, in no order.
    private var entries: [pollfd]
    /// Where each registered descriptor's entry is in `entries`.
    private var slots: [Int32: Int] = [:]

    /// A poller with its wake pipe.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` naming `pipe` or `fcntl`.
    init() throws(TransportError) {
        wakePipe = try SelfPipe()
        entries = [pollfd(fd: wakePipe.readFD, events: Self.events(.readable), revents: 0)]
    }

    func add(_ fd: Int32, _ interest: PollInterest) throws(TransportError) {
        guard fd >= 0 else { throw .system(call: "poll(add)", errno: EBADF) }
        guard slots[fd] == nil else { throw .system(call: "poll(add)", errno: EEXIST) }
        slots[fd] = entries.count
        entries.append(pollfd(fd: fd, events: Self.events(interest), revents: 0))
    }

    func modify(_ fd: Int32, _ interest: PollInterest) throws(TransportError) {
        guard let i = slots[fd] else { throw .system(call: "poll(modify)", errno: ENOENT) }
        entries[i].events = Self.events(interest)
    }

    func remove(_ fd: Int32) {
        guard let i = slots.removeValue(forKey: fd) else { return }
        let last = entries.count - 1
        if i != last {
            entries[i] = entries[last]
            slots[entries[i].fd] = i
        }
        entries.removeLast()
    }

    func wait(timeout: Int32, into events: inout [PollEvent]) throws(TransportError) {
        events.removeAll(keepingCapacity: true)
        let n = try System.waitCall("poll") {
            entries.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), timeout) }
        }
        var left = Int(n)
        var i = 0
        while left > 0, i < entries.count {
            let got = Int32(entries[i].revents)
            if got != 0 {
                left -= 1
                if i == 0 {
                    wakePipe.drain()
                } else {
                    events.append(PollEvent(fd: entries[i].fd,
                                            readable: got & (POLLIN | POLLHUP | POLLERR | POLLNVAL) != 0,
                                            writable: got & POLLOUT != 0))
                }
            }
            i += 1
        }
    }

    func wake() { wakePipe.wake() }

    func close() { wakePipe.close() }

    private static func events(_ interest: PollInterest) -> Int16 {
        Int16(truncatingIfNeeded: (interest.contains(.readable) ? POLLIN : 0) | (interest.contains(.writable) ? POLLOUT : 0))
    }
}
