#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ListSyncTransport
import Synchronization

/// Something the event loop tells when its descriptor is ready. Called on the loop's thread only.
package protocol EventHandler: AnyObject {
    /// The descriptor is readable (or has hung up or failed: the next read says which).
    func readable()
    /// The descriptor is writable (or a connect finished).
    func writable()
}

/// One thread that waits on many non-blocking descriptors and runs what is ready: every socket of
/// this module is driven by a loop, never by a thread of its own.
///
/// The waiting is done by a ``Poller``: epoll on Linux, kqueue on Darwin and the BSDs, poll(2)
/// elsewhere, or the one `LISTSYNC_POLLER` names (``PollerKind``); all three are level-triggered
/// and deliver the same callbacks. ``pollerKind`` says which one a loop uses.
///
/// Work reaches the loop with ``execute(_:)`` from any thread; descriptors, handlers and timers
/// are touched on the loop's thread only. ``shared`` is started on first use and lives as long as
/// the process; tests and servers may make their own and ``shutdown()`` them.
public final class EventLoop: @unchecked Sendable {
    // @unchecked Sendable: `handlers`, `timers`, `endOfTurn` and the poller's registrations are
    // read and written only on the loop's own thread (every entry point hops there with
    // `execute`); the task queue crossing threads is behind a Mutex, and the poller's `wake()`,
    // the one poller call made from other threads, is made only while the poller is open: a
    // caller decides under that Mutex (`closed` false) and counts itself in `wakers`, and the loop
    // closes the poller only once `closed` is set and `wakers` is back to zero.

    /// The process-wide loop, started on first use, with the poller `LISTSYNC_POLLER` names (or
    /// the system's default). If that variable names no poller of this system, or the poller
    /// cannot be created, it prints why on the standard error and exits the process (status 2).
    public static let shared: EventLoop = {
        do { return try EventLoop() } catch {
            FileHandle.standardError.write(Data("cannot start the event loop: \(error)\n".utf8))
            exit(2)
        }
    }()

    /// The poller this loop waits with.
    public let pollerKind: PollerKind
    private let poller: any Poller
    private let queue = Mutex<(tasks: [@Sendable () -> Void], stopping: Bool, closed: Bool)>(([], false, false))
    private let stopped = DispatchSemaphore(value: 0)
    private var handlers: [Int32: EventHandler] = [:]
    /// Work to run at the end of the current turn (writes coalesced across a turn's tasks).
    private var endOfTurn: [() -> Void] = []
    private var timers = TimerQueue()
    private let threadID = Mutex<pthread_t?>(nil)
    private let waits = Atomic<Int>(0)
    /// Wake-ups of the poller in progress on other threads (outside the queue's lock).
    private let wakers = Atomic<Int>(0)

    /// The one buffer every socket of this loop reads into (``read(_:limit:)``), loop thread only.
    /// A fresh zero-filled 64 KiB array per readable event cost a malloc of a large chunk (which
    /// makes glibc consolidate its fast bins), a memset and a free for every frame received.
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: EventLoop.readSize, alignment: 16)

    /// The most bytes one ``read(_:limit:)`` returns.
    package static let readSize = 65_536

    /// How many times the loop has returned from its poller (a loop that spins shows it here).
    package var wakeups: Int { waits.load(ordering: .relaxed) }

    /// Starts a loop on a new thread, waiting with `poller`, or when `nil` with the one
    /// `LISTSYNC_POLLER` names (``PollerKind/fromEnvironment()``: the system's default if unset).
    ///
    /// - Throws: ``EventLoopError/unknownPoller(_:available:)`` or
    ///   ``EventLoopError/unavailablePoller(_:available:)`` for a poller this system lacks (their
    ///   text names the choices), ``EventLoopError/system(_:)`` if the poller cannot be created.
    public init(poller kind: PollerKind? = nil) throws(EventLoopError) {
        let chosen: PollerKind
        if let kind { chosen = kind } else { chosen = try PollerKind.fromEnvironment() }
        pollerKind = chosen
        poller = try makePoller(chosen)
        let thread = Thread { [self] in run() }
        thread.name = "listsync-event-loop"
        thread.start()
    }

    deinit { readBuffer.deallocate() }

    /// Runs `task` on the loop's thread, soon. Safe from any thread. A task given after
    /// ``shutdown()`` never runs.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        let wake = queue.withLock { q -> Bool in
            q.tasks.append(task)
            guard q.tasks.count == 1 && !q.closed else { return false }
            // Counted under the lock, before `closed` can be set: the loop closes the poller only
            // once no wake-up is in progress.
            wakers.add(1, ordering: .sequentiallyConsistent)
            return true
        }
        // The wake-up (a syscall) outside the lock: under it, every other thread queuing work
        // spun on the lock while it ran (most of the daemon's CPU under load).
        if wake { wakeAndRelease() }
    }

    /// Wakes the poller, then releases the count ``execute(_:)`` or ``shutdown()`` took.
    private func wakeAndRelease() {
        poller.wake()
        wakers.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Whether the caller runs on the loop's thread.
    package var inLoop: Bool {
        guard let t = threadID.withLock({ $0 }) else { return false }
        return pthread_equal(t, pthread_self()) != 0
    }

    /// Stops the loop after the tasks already queued and waits for its thread to end. Descriptors
    /// still registered are closed. Must not be called on the loop's thread.
    public func shutdown() {
        precondition(!inLoop, "EventLoop.shutdown() called on the loop's own thread")
        let (first, wake) = queue.withLock { q -> (Bool, Bool) in
            defer { q.stopping = true }
            let wake = !q.stopping && !q.closed
            if wake { wakers.add(1, ordering: .sequentiallyConsistent) }
            return (!q.stopping, wake)
        }
        if wake { wakeAndRelease() }
        guard first else { return }
        stopped.wait()
    }

    /// The number of descriptors registered with this loop now (sockets it drives): 0 once
    /// every connection and listener on it is closed. For leak checks.
    public func registeredDescriptors() async -> Int {
        await withCheckedContinuation { (c: CheckedContinuation<Int, Never>) in
            execute { [self] in c.resume(returning: handlers.count) }
        }
    }

    // MARK: Loop-thread API

    /// Watches `fd` for `handler`: readable always (hang-ups and errors come as readable),
    /// writable if `writable`. Loop thread only.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` if `fd` is registered already (`EEXIST`)
    ///   or the poller refuses it; then nothing is registered.
    package func register(_ fd: Int32, _ handler: EventHandler, writable: Bool) throws(TransportError) {
        assert(inLoop, "EventLoop.register off the loop's thread")
        // Checked here, not left to the poller: kqueue would silently update the registration.
        guard handlers[fd] == nil else { throw .system(call: "register", errno: EEXIST) }
        try poller.add(fd, writable ? [.readable, .writable] : .readable)
        handlers[fd] = handler
    }

    /// Registers the listening socket `fd` for the acceptor `install` makes (and keeps), on the
    /// loop's thread, and waits. On failure `uninstall` runs there, `fd` is closed and the error
    /// thrown: what `TCPListener.listen` and `HTTPServer.listen` share. Not on the loop's thread.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` if the poller refuses `fd`.
    package func registerAcceptor(_ fd: Int32, install: @escaping @Sendable () -> EventHandler,
                                  uninstall: @escaping @Sendable () -> Void) async throws(TransportError) {
        let result: Result<Void, TransportError> = await withCheckedContinuation { done in
            execute { [self] in
                do throws(TransportError) {
                    try register(fd, install(), writable: false)
                    done.resume(returning: .success(()))
                } catch {
                    uninstall()
                    done.resume(returning: .failure(error))
                }
            }
        }
        if case let .failure(error) = result {
            System.close(fd)
            throw error
        }
    }

    /// Changes whether `fd` is watched for writability (it stays watched for readability).
    /// Nothing if `fd` is not registered. Loop thread only.
    package func setWritable(_ fd: Int32, _ writable: Bool) {
        setInterest(fd, readable: true, writable: writable)
    }

    /// Sets whether `fd` is watched for readability and writability: a proxy that holds too many
    /// bytes stops reading its source (every poller is level-triggered, so a readable descriptor
    /// nobody reads would wake the loop at once again). Nothing if `fd` is not registered. Loop
    /// thread only.
    package func setInterest(_ fd: Int32, readable: Bool, writable: Bool) {
        assert(inLoop, "EventLoop.setInterest off the loop's thread")
        guard handlers[fd] != nil else { return }
        var interest: PollInterest = []
        if readable { interest.insert(.readable) }
        if writable { interest.insert(.writable) }
        do {
            try poller.modify(fd, interest)
        } catch {
            // The poller fails a change only for a descriptor it does not watch or one closed
            // while registered: a bug of the caller (deregister first, then close).
            assertionFailure("\(pollerKind): cannot watch descriptor \(fd) for \(interest): \(error)")
        }
    }

    /// Stops watching `fd` (before it is closed). Nothing if `fd` is not registered. Loop thread only.
    package func deregister(_ fd: Int32) {
        assert(inLoop, "EventLoop.deregister off the loop's thread")
        guard handlers.removeValue(forKey: fd) != nil else { return }
        poller.remove(fd)
    }

    /// Reads at most `limit` (and ``readSize``) bytes from the non-blocking `fd` into the loop's
    /// read buffer: the bytes read (empty at the end of the stream), or nil if the read would
    /// block. The bytes stay valid until the next read on this loop: copy what is kept. Loop
    /// thread only.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` for a failed read.
    package func read(_ fd: Int32, limit: Int = readSize) throws(TransportError) -> UnsafeRawBufferPointer? {
        assert(inLoop, "EventLoop.read off the loop's thread")
        let room = UnsafeMutableRawBufferPointer(rebasing: readBuffer[0..<min(limit, readBuffer.count)])
        guard let n = try System.read(fd, room) else { return nil }
        return UnsafeRawBufferPointer(rebasing: room[0..<n])
    }

    /// Runs `task` on the loop after `delay`, unless cancelled. Loop thread only.
    ///
    /// Complexity: O(log timers).
    @discardableResult
    package func schedule(after delay: Duration, _ task: @escaping () -> Void) -> TimerQueue.ID {
        assert(inLoop, "EventLoop.schedule off the loop's thread")
        return timers.add(at: Self.now() &+ delay.nanoseconds, task)
    }

    /// Runs `task` once the tasks and events of the current turn are done (so that a turn's many
    /// small writes to one socket leave in one system call). Loop thread only.
    package func atEndOfTurn(_ task: @escaping () -> Void) { endOfTurn.append(task) }

    private func runEndOfTurn() {
        while !endOfTurn.isEmpty {
            let tasks = endOfTurn
            endOfTurn = []
            for t in tasks { t() }
        }
    }

    /// Cancels a timer (nothing if it already ran). Loop thread only.
    package func cancel(_ timer: TimerQueue.ID) { timers.cancel(timer) }

    /// Monotonic nanoseconds.
    package static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    // MARK: Internals

    private func run() {
        threadID.withLock { $0 = pthread_self() }
        var events: [PollEvent] = []
        events.reserveCapacity(256)
        while true {
            let (tasks, stopping) = queue.withLock { q -> ([@Sendable () -> Void], Bool) in
                defer { q.tasks = [] }
                return (q.tasks, q.stopping)
            }
            for t in tasks { t() }
            runEndOfTurn()
            if stopping { break }
            for t in timers.popDue(now: Self.now()) { t() }
            runEndOfTurn()
            let timeout: Int32
            if let next = timers.nextDeadline {
                let now = Self.now()
                timeout = next <= now ? 0 : Int32(min((next - now + 999_999) / 1_000_000, 60_000))
            } else {
                timeout = 60_000
            }
            do {
                try poller.wait(timeout: timeout, into: &events)
                waits.add(1, ordering: .relaxed)
            } catch {
                // EINTR is not an error here (System.waitCall); what is left (ENOMEM) may pass:
                // say so, and do not spin while it lasts.
                FileHandle.standardError.write(Data("event loop (\(pollerKind)): \(error); retrying in 10 ms\n".utf8))
                usleep(10_000)
                continue
            }
            for e in events {
                if e.writable { handlers[e.fd]?.writable() }
                if e.readable { handlers[e.fd]?.readable() }
            }
            runEndOfTurn()
        }
        // Shut down: close what is still registered, then the poller (no wake-up after that).
        for fd in handlers.keys {
            poller.remove(fd)
            System.close(fd)
        }
        handlers = [:]
        queue.withLock { q in q.closed = true }
        // No wake-up starts after `closed`; wait out those already started, then close.
        while wakers.load(ordering: .sequentiallyConsistent) != 0 { sched_yield() }
        poller.close()
        stopped.signal()
    }
}

extension Duration {
    /// The duration in whole nanoseconds (negative durations count as zero): the one conversion
    /// every module of the package uses.
    package var nanoseconds: UInt64 {
        let (s, a) = components
        if s < 0 { return 0 }
        return UInt64(s) &* 1_000_000_000 &+ UInt64(a / 1_000_000_000)
    }
}

/// Timers of one event loop: a binary heap of deadlines; cancelled timers are dropped lazily.
package struct TimerQueue {
    /// A timer's handle.
    package typealias ID = UInt64
    private var heap: [(deadline: UInt64, id: ID)] = []
    private var tasks: [ID: () -> Void] = [:]
    private var next: ID = 0

    /// The earliest live deadline.
    var nextDeadline: UInt64? {
        mutating get {
            while let top = heap.first, tasks[top.id] == nil { pop() }
            return heap.first?.deadline
        }
    }

    mutating func add(at deadline: UInt64, _ task: @escaping () -> Void) -> ID {
        next += 1
        tasks[next] = task
        heap.append((deadline, next))
        var i = heap.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            guard heap[i].deadline < heap[p].deadline else { break }
            heap.swapAt(i, p)
            i = p
        }
        return next
    }

    mutating func cancel(_ id: ID) { tasks[id] = nil }

    /// Removes and returns every timer due at `now`, earliest first (the caller runs them, so
    /// that they may add timers).
    mutating func popDue(now: UInt64) -> [() -> Void] {
        var due: [() -> Void] = []
        while let top = heap.first, top.deadline <= now {
            pop()
            if let t = tasks.removeValue(forKey: top.id) { due.append(t) }
        }
        return due
    }

    private mutating func pop() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < heap.count, heap[l].deadline < heap[m].deadline { m = l }
            if r < heap.count, heap[r].deadline < heap[m].deadline { m = r }
            if m == i { return }
            heap.swapAt(i, m)
            i = m
        }
    }
}
