import ListSyncTransport

/// What a ``Poller`` watches a descriptor for.
package struct PollInterest: OptionSet, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Data to read, end of stream, hang-up or an error: whatever the next read would tell.
    package static let readable = PollInterest(rawValue: 1)
    /// Room to write, or a non-blocking connect that finished.
    package static let writable = PollInterest(rawValue: 2)

    package var description: String {
        switch (contains(.readable), contains(.writable)) {
        case (true, true): return "[readable, writable]"
        case (true, false): return "[readable]"
        case (false, true): return "[writable]"
        case (false, false): return "[]"
        }
    }
}

/// One ready descriptor, as a ``Poller`` reports it.
package struct PollEvent: Hashable, Sendable {
    /// The descriptor.
    package var fd: Int32
    /// Readable, at end of stream, hung up or failed: the next read says which. Hang-ups and
    /// errors are reported this way whatever the interest (epoll and poll report them even
    /// without one; kqueue only through an enabled filter).
    package var readable: Bool
    /// Writable (or a non-blocking connect finished, well or not).
    package var writable: Bool

    package init(fd: Int32, readable: Bool, writable: Bool) {
        self.fd = fd
        self.readable = readable
        self.writable = writable
    }
}

/// The operating system's readiness interface under an ``EventLoop``: level-triggered, one
/// registration per descriptor, and a wake-up that any thread may send.
///
/// Three implementations, in files of their own: ``EpollPoller`` (Linux), `KqueuePoller` (Darwin
/// and the BSDs; not compiled on Linux) and ``PollPoller`` (poll(2), any POSIX system). Level-
/// triggered means a descriptor stays reported by every ``wait(timeout:into:)`` for as long as it
/// is ready and watched: nothing is lost if a handler reads only part of what is there.
///
/// Threads: ``wake()`` may be called from any thread, at any time before ``close()``; every
/// other method belongs to the thread that owns the poller (the loop's thread).
package protocol Poller: AnyObject {
    /// Which implementation this is.
    var kind: PollerKind { get }

    /// Starts watching `fd` for `interest` (empty: only hang-ups and errors, where the system
    /// reports those without interest). `fd` must not be registered already.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` (`EEXIST` if `fd` is registered already;
    ///   epoll and poll check this, kqueue cannot and updates the registration instead).
    func add(_ fd: Int32, _ interest: PollInterest) throws(TransportError)

    /// Changes what a registered `fd` is watched for.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` (`ENOENT` if `fd` is not registered, for
    ///   epoll and poll).
    func modify(_ fd: Int32, _ interest: PollInterest) throws(TransportError)

    /// Stops watching `fd`; call it before closing `fd`. Nothing if `fd` is not registered (the
    /// system's error, such as `ENOENT` for a descriptor closed first, is not worth reporting:
    /// the descriptor is not watched either way).
    func remove(_ fd: Int32)

    /// Waits until a watched descriptor is ready, ``wake()`` is called, or `timeout` milliseconds
    /// pass (-1: no limit; 0: just look), and puts the ready descriptors into `events` (emptied
    /// first). A wake-up is consumed here and not reported; an interrupted wait (`EINTR`) returns
    /// with nothing, so that the caller recomputes its timeout.
    ///
    /// Complexity: epoll and kqueue O(ready descriptors, at most 256 a call); poll O(registered
    /// descriptors) for each call.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` if the wait itself fails (`ENOMEM`).
    func wait(timeout: Int32, into events: inout [PollEvent]) throws(TransportError)

    /// Makes the current or the next ``wait(timeout:into:)`` return. Any thread; wake-ups not yet
    /// consumed coalesce into one.
    func wake()

    /// Closes the poller's own descriptors (not the registered ones). Owner's thread, once, last.
    func close()
}

/// The poller of `kind`, if this system has it.
///
/// - Throws: ``EventLoopError/unavailablePoller(_:available:)`` if this system has no such
///   poller; ``EventLoopError/system(_:)`` if it cannot be created (out of descriptors).
package func makePoller(_ kind: PollerKind) throws(EventLoopError) -> any Poller {
    guard kind.isAvailable else { throw .unavailablePoller(kind, available: PollerKind.available) }
    do throws(TransportError) {
        switch kind {
        case .epoll:
            #if os(Linux)
            return try EpollPoller()
            #else
            break
            #endif
        case .kqueue:
            #if canImport(Darwin) || os(FreeBSD) || os(OpenBSD)
            return try KqueuePoller()
            #else
            break
            #endif
        case .poll:
            return try PollPoller()
        }
    } catch {
        throw .system(error)
    }
    throw .unavailablePoller(kind, available: PollerKind.available)
}
