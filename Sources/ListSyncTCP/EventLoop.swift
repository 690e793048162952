#if canImport(Glibc)
import CListSyncLinux
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ListSync
import Synchronization

/// Something the event loop tells when its descriptor is ready. Called on the loop's thread only.
package protocol EventHandler: AnyObject {
    /// The descriptor is readable (or has hung up or failed: the next read says which).
    func readable()
    /// The descriptor is writable (or a connect finished).
    func writable()
}

/// One thread that waits on many non-blocking descriptors (epoll) and runs what is ready: every
/// socket of this module is driven by a loop, never by a thread of its own.
///
/// Work reaches the loop with ``execute(_:)`` from any thread; descriptors, handlers and timers
/// are touched on the loop's thread only. ``shared`` is started on first use and lives as long as
/// the process; tests and servers may make their own and ``shutdown()`` them.
///
/// Linux only for now (epoll); on other systems `init` throws (kqueue is future work).
public final class EventLoop: @unchecked Sendable {
    // @unchecked Sendable: `handlers`, `timers`, `timerTasks` and `nextTimer` are read and written
    // only on the loop's own thread (every entry point hops there with `execute`); the task queue
    // crossing threads is behind a Mutex, and the descriptors are immutable after init.

    /// The process-wide loop, started on first use.
    public static let shared: EventLoop = {
        do { return try EventLoop() } catch { fatalError("cannot start the event loop: \(error)") }
    }()

    private let pollFD: Int32
    private let wakeFD: Int32
    private let queue = Mutex<(tasks: [@Sendable () -> Void], stopping: Bool)>(([], false))
    private let stopped = DispatchSemaphore(value: 0)
    private var handlers: [Int32: EventHandler] = [:]
    /// Work to run at the end of the current turn (writes coalesced across a turn's tasks).
    private var endOfTurn: [() -> Void] = []
    private var timers = TimerQueue()
    private let threadID = Mutex<pthread_t?>(nil)

    /// Starts a loop on a new thread.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` if the poller cannot be created.
    public init() throws(TransportError) {
        #if os(Linux)
        pollFD = try System.call("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        let wake: Int32
        do {
            wake = try System.call("eventfd") { eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)) }
        } catch {
            System.close(pollFD)
            throw error
        }
        wakeFD = wake
        var ev = epoll_event()
        ev.events = EPOLLIN.rawValue
        ev.data.fd = wakeFD
        _ = try System.call("epoll_ctl(ADD)") { epoll_ctl(pollFD, EPOLL_CTL_ADD, wakeFD, &ev) }
        let thread = Thread { [self] in run() }
        thread.name = "listsync-event-loop"
        thread.start()
        #else
        throw .system(call: "epoll_create1 (this system has no epoll; kqueue is not implemented yet)", errno: ENOSYS)
        #endif
    }

    /// Runs `task` on the loop's thread, soon. Safe from any thread.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        let wake = queue.withLock { q -> Bool in
            q.tasks.append(task)
            return q.tasks.count == 1
        }
        if wake { signal() }
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
        let first = queue.withLock { q -> Bool in
            defer { q.stopping = true }
            return !q.stopping
        }
        guard first else { return }
        signal()
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

    /// Watches `fd` for `handler`. Loop thread only.
    package func register(_ fd: Int32, _ handler: EventHandler, writable: Bool) throws(TransportError) {
        handlers[fd] = handler
        try control(EPOLL_CTL_ADD, fd, writable: writable)
    }

    /// Changes whether `fd` is watched for writability. Loop thread only.
    package func setWritable(_ fd: Int32, _ writable: Bool) {
        guard handlers[fd] != nil else { return }
        try? control(EPOLL_CTL_MOD, fd, writable: writable)
    }

    /// Sets whether `fd` is watched for readability and writability: a proxy that holds too many
    /// bytes stops reading its source (epoll is level-triggered, so a readable descriptor nobody
    /// reads would wake the loop at once again). Loop thread only.
    package func setInterest(_ fd: Int32, readable: Bool, writable: Bool) {
        guard handlers[fd] != nil else { return }
        try? control(EPOLL_CTL_MOD, fd, readable: readable, writable: writable)
    }

    /// Stops watching `fd` (before it is closed). Loop thread only.
    package func deregister(_ fd: Int32) {
        guard handlers.removeValue(forKey: fd) != nil else { return }
        #if os(Linux)
        var ev = epoll_event()
        _ = epoll_ctl(pollFD, EPOLL_CTL_DEL, fd, &ev)
        #endif
    }

    /// Runs `task` on the loop after `delay`, unless cancelled. Loop thread only.
    @discardableResult
    package func schedule(after delay: Duration, _ task: @escaping () -> Void) -> TimerQueue.ID {
        timers.add(at: Self.now() &+ delay.nanoseconds, task)
    }

    /// Runs `task` once the tasks and events of the current turn are done (so that a turn's many
    /// small writes to one socket leave in one system call). Loop thread only.
    func atEndOfTurn(_ task: @escaping () -> Void) { endOfTurn.append(task) }

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

    private func control(_ op: Int32, _ fd: Int32, readable: Bool = true, writable: Bool) throws(TransportError) {
        #if os(Linux)
        var ev = epoll_event()
        ev.events = (readable ? EPOLLIN.rawValue | EPOLLRDHUP.rawValue : 0) | (writable ? EPOLLOUT.rawValue : 0)
        ev.data.fd = fd
        _ = try System.call("epoll_ctl") { epoll_ctl(pollFD, op, fd, &ev) }
        #endif
    }

    private func signal() {
        #if os(Linux)
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(wakeFD, $0.baseAddress, 8) }
        #endif
    }

    private func run() {
        #if os(Linux)
        threadID.withLock { $0 = pthread_self() }
        var events = [epoll_event](repeating: epoll_event(), count: 256)
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
            let n = events.withUnsafeMutableBufferPointer { epoll_wait(pollFD, $0.baseAddress, 256, timeout) }
            if n < 0 { continue }   // EINTR
            for i in 0..<Int(n) {
                let fd = events[i].data.fd
                let flags = events[i].events
                if fd == wakeFD {
                    var value: UInt64 = 0
                    _ = withUnsafeMutableBytes(of: &value) { Glibc.read(wakeFD, $0.baseAddress, 8) }
                    continue
                }
                if flags & EPOLLOUT.rawValue != 0 { handlers[fd]?.writable() }
                if flags & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
                    handlers[fd]?.readable()
                }
            }
            runEndOfTurn()
        }
        // Shut down: close what is still registered.
        for fd in handlers.keys { System.close(fd) }
        handlers = [:]
        System.close(wakeFD)
        System.close(pollFD)
        stopped.signal()
        #endif
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
