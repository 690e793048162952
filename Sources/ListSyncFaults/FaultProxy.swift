#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ListSyncTransport
import ListSyncTCP

/// A TCP proxy that injects seeded faults between a client and a target: it listens, connects
/// each accepted connection to the target and passes bytes both ways as its ``FaultMachine``
/// says (delays, stalls, drops, cuts at a random byte, partitions).
///
/// It is the socket loop around the machine, on an ``EventLoop`` (its own unless one is passed):
/// every call of the operating system goes through the transport's one funnel, `System`. Reads
/// of a direction pause while more than ``bufferLimit`` bytes wait for it, so a stalled or
/// partitioned link holds a bounded amount and the senders' own buffers fill, as on a network.
///
/// ```swift
/// var plan = FaultPlan(seed: 7)
/// plan.cutProbability = 0.3
/// let proxy = try await FaultProxy.start(to: SocketAddress(numeric: "127.0.0.1", port: daemonPort)!, plan: plan)
/// // clients connect to 127.0.0.1:proxy.port ...
/// await proxy.partition()
/// await proxy.heal()
/// print(await proxy.statistics())
/// await proxy.close()
/// ```
public final class FaultProxy: @unchecked Sendable {
    // @unchecked Sendable: `machine`, `links`, `timer` and `listener` are read and written only on
    // `loop`'s thread (every public method hops there with `execute`); the rest is immutable.

    /// The address the proxy listens on (the port chosen when 0 was asked).
    public let address: SocketAddress
    /// The address it connects each client to.
    public let target: SocketAddress
    /// Bytes held for one direction of one connection before the proxy stops reading its source.
    public let bufferLimit: Int
    /// The loop the proxy runs on.
    public let loop: EventLoop
    private let ownsLoop: Bool
    private let log: (@Sendable (String) -> Void)?
    private var machine: FaultMachine
    private var listener: Listener?
    private var links: [FaultMachine.ConnectionID: Link] = [:]
    private var timer: (id: TimerQueue.ID, at: UInt64)?

    /// The port the proxy listens on.
    public var port: UInt16 { address.port }

    private init(address: SocketAddress, target: SocketAddress, plan: FaultPlan, bufferLimit: Int, loop: EventLoop, ownsLoop: Bool,
                 log: (@Sendable (String) -> Void)?) {
        self.address = address
        self.target = target
        self.bufferLimit = bufferLimit
        self.loop = loop
        self.ownsLoop = ownsLoop
        self.log = log
        machine = FaultMachine(plan: plan)
    }

    /// Starts a proxy listening on `host:port` (port 0: any free one) that connects each client
    /// to `target` and injects the faults of `plan`.
    ///
    /// - Parameters:
    ///   - loop: the event loop to run on; `nil`: a loop of its own, shut down by ``close()``.
    ///   - log: called on the loop's thread with one line per fault and per connection.
    /// - Throws: `TransportError` if the port cannot be bound.
    public static func start(host: String = "127.0.0.1", port: UInt16 = 0, to target: SocketAddress, plan: FaultPlan,
                             bufferLimit: Int = 1 << 20, loop: EventLoop? = nil,
                             log: (@Sendable (String) -> Void)? = nil) async throws -> FaultProxy {
        let theLoop = try loop ?? EventLoop()
        let (fd, bound): (Int32, SocketAddress)
        do {
            (fd, bound) = try System.listeningSocket(host: host, port: port, backlog: 128)
        } catch {
            if loop == nil { theLoop.shutdown() }
            throw error
        }
        let proxy = FaultProxy(address: bound, target: target, plan: plan, bufferLimit: bufferLimit, loop: theLoop,
                               ownsLoop: loop == nil, log: log)
        let failure: TransportError? = await withCheckedContinuation { (c: CheckedContinuation<TransportError?, Never>) in
            theLoop.execute {
                let l = Listener(fd: fd, proxy: proxy)
                do throws(TransportError) {
                    try theLoop.register(fd, l, writable: false)
                    proxy.listener = l
                    c.resume(returning: nil)
                } catch {
                    System.close(fd)
                    c.resume(returning: error)
                }
            }
        }
        if let failure {
            if loop == nil { theLoop.shutdown() }
            throw failure
        }
        return proxy
    }

    // MARK: Control

    /// Starts a partition (``FaultMachine/partition(now:)``).
    public func partition() async { await onLoop { p in p.perform(p.machine.partition(now: EventLoop.now())) } }

    /// Ends a partition; random faults go on.
    public func endPartition() async { await onLoop { p in p.perform(p.machine.endPartition(now: EventLoop.now())) } }

    /// Ends any partition and every fault for good: from now on the proxy only forwards.
    public func heal() async { await onLoop { p in p.perform(p.machine.heal(now: EventLoop.now())) } }

    /// What the proxy did so far.
    public func statistics() async -> FaultStatistics { await onLoop { $0.machine.statistics } }

    /// Connections proxied now.
    public func openConnections() async -> Int { await onLoop { $0.links.count } }

    /// Stops listening and closes every connection (with a FIN); shuts the loop down if it is the
    /// proxy's own. Must not be called on the loop's thread.
    public func close() async {
        await onLoop { p in
            if let l = p.listener {
                p.loop.deregister(l.fd)
                System.close(l.fd)
                p.listener = nil
            }
            for id in p.links.keys { p.closeLink(id, reset: false) }
            if let t = p.timer { p.loop.cancel(t.id) }
            p.timer = nil
        }
        if ownsLoop { loop.shutdown() }
    }

    private func onLoop<T: Sendable>(_ body: @escaping @Sendable (FaultProxy) -> T) async -> T {
        await withCheckedContinuation { c in loop.execute { [self] in c.resume(returning: body(self)) } }
    }

    // MARK: The loop

    fileprivate func acceptReady() {
        guard let l = listener else { return }
        while true {
            let accepted: (Int32, SocketAddress)?
            do { accepted = try System.accept(l.fd) } catch {
                log?("accept failed: \(error)")
                return
            }
            guard let (fd, from) = accepted else { return }
            let (id, actions) = machine.accept(now: EventLoop.now())
            let link = Link(id: id, proxy: self)
            link.sides[0].fd = fd
            links[id] = link
            do { try loop.register(fd, link.sides[0], writable: false) } catch {
                log?("\(id) register failed: \(error)")
            }
            log?("\(id) accepted from \(from)")
            perform(actions)
        }
    }

    /// Does what the machine said, then arms the timer for its next deadline.
    fileprivate func perform(_ actions: [FaultMachine.Action]) {
        for a in actions {
            switch a {
            case let .connect(id):
                guard let link = links[id] else { continue }
                connect(link)
            case let .forward(id, direction, n):
                guard let link = links[id] else { continue }
                link.forward(direction, n)
            case let .close(id, reason, reset):
                log?("\(id) closed: \(reason)\(reset ? " (reset)" : "")")
                closeLink(id, reset: reset)
            }
        }
        armTimer()
    }

    private func armTimer() {
        let next = machine.nextDeadline
        if let t = timer, t.at == next { return }
        if let t = timer { loop.cancel(t.id) }
        timer = nil
        guard let next else { return }
        let now = EventLoop.now()
        let id = loop.schedule(after: .nanoseconds(next > now ? Int64(next - now) : 0)) { [self] in
            timer = nil
            perform(machine.advance(now: EventLoop.now()))
        }
        timer = (id, next)
    }

    private func connect(_ link: Link) {
        let side = link.sides[1]
        do {
            let fd = try System.socket(family: target.family)
            side.fd = fd
            try System.setNoDelay(fd)
            side.connecting = true
            try loop.register(fd, side, writable: true)
            if try System.connect(fd, target) {
                side.connecting = false
                link.update(side)
                perform(machine.connected(link.id, now: EventLoop.now()))
            }
        } catch {
            log?("\(link.id) connect to \(target) failed: \(error)")
            perform(machine.failed(link.id))
        }
    }

    fileprivate func connectFinished(_ side: Side) {
        guard let link = side.link else { return }
        side.connecting = false
        do {
            let e = try System.socketError(side.fd)
            if e != 0 { throw TransportError.system(call: "connect", errno: e) }
        } catch {
            log?("\(link.id) connect to \(target) failed: \(error)")
            perform(machine.failed(link.id))
            return
        }
        link.update(side)
        perform(machine.connected(link.id, now: EventLoop.now()))
    }

    fileprivate func closeLink(_ id: FaultMachine.ConnectionID, reset: Bool) {
        guard let link = links.removeValue(forKey: id) else { return }
        for side in link.sides where side.fd >= 0 {
            loop.deregister(side.fd)
            if reset { System.setResetOnClose(side.fd) }
            System.close(side.fd)
            side.fd = -1
            side.link = nil
        }
    }

    fileprivate func machineFailed(_ id: FaultMachine.ConnectionID) { perform(machine.failed(id)) }
    fileprivate func machineReceived(_ id: FaultMachine.ConnectionID, _ d: FaultMachine.Direction, _ n: Int) {
        perform(machine.received(id, d, bytes: n, now: EventLoop.now()))
    }
    fileprivate func machineEnded(_ id: FaultMachine.ConnectionID, _ d: FaultMachine.Direction) {
        perform(machine.ended(id, d, now: EventLoop.now()))
    }
}

/// The listening socket's handler.
private final class Listener: EventHandler {
    let fd: Int32
    unowned let proxy: FaultProxy
    init(fd: Int32, proxy: FaultProxy) {
        self.fd = fd
        self.proxy = proxy
    }
    func readable() { proxy.acceptReady() }
    func writable() {}
}

/// One proxied connection: side 0 is the client's socket, side 1 the target's.
private final class Link {
    let id: FaultMachine.ConnectionID
    unowned let proxy: FaultProxy
    let sides: [Side]

    init(id: FaultMachine.ConnectionID, proxy: FaultProxy) {
        self.id = id
        self.proxy = proxy
        sides = [Side(index: 0), Side(index: 1)]
        for s in sides { s.link = self }
    }

    /// Moves `n` bytes held from the source of `direction` to its destination's output.
    func forward(_ direction: FaultMachine.Direction, _ n: Int) {
        let from = sides[direction.rawValue], to = sides[1 - direction.rawValue]
        to.output.append(from.held.prefix(n))
        from.held.removeFirst(n)
        to.flush()
        update(from)
        update(to)
    }

    /// What the loop watches a side for: reads while its direction holds less than the limit (and
    /// its peer is not still connecting), writes while it has output (or is connecting).
    func update(_ side: Side) {
        guard side.fd >= 0 else { return }
        let reading = !side.ended && side.held.count + sides[1 - side.index].output.count < proxy.bufferLimit
        let writing = side.connecting || !side.output.isEmpty
        proxy.loop.setInterest(side.fd, readable: reading, writable: writing)
    }
}

/// One socket of a link.
private final class Side: EventHandler {
    let index: Int
    var fd: Int32 = -1
    weak var link: Link?
    var connecting = false
    var ended = false
    /// Bytes read from this socket and not yet forwarded (the machine knows their count).
    var held = ByteQueue()
    /// Bytes to write to this socket.
    var output = ByteQueue()

    init(index: Int) { self.index = index }

    var direction: FaultMachine.Direction { index == 0 ? .upstream : .downstream }

    func readable() {
        guard let link, fd >= 0, !ended else { return }
        let room = link.proxy.bufferLimit - held.count
        guard room > 0 else {
            link.update(self)
            return
        }
        let bytes: UnsafeRawBufferPointer?
        do { bytes = try link.proxy.loop.read(fd, limit: room) } catch {
            link.proxy.machineFailed(link.id)
            return
        }
        guard let bytes else { return }
        let n = bytes.count
        if n == 0 {
            ended = true
            link.update(self)
            link.proxy.machineEnded(link.id, direction)
            return
        }
        held.append(bytes)
        link.proxy.machineReceived(link.id, direction, n)
        if fd >= 0 { link.update(self) }
    }

    func writable() {
        guard let link, fd >= 0 else { return }
        if connecting {
            link.proxy.connectFinished(self)
            if fd < 0 { return }
        }
        flush()
        if fd >= 0 { link.update(self) }
    }

    /// Writes what it can of the output now; the rest waits for the socket to be writable.
    func flush() {
        guard let link, fd >= 0, !connecting, !output.isEmpty else { return }
        var written = 0
        do {
            while written < output.count {
                let w = try output.withUnsafeBytes(from: written) { b throws(TransportError) in try System.write(fd, b) }
                guard let w else { break }
                written += w
            }
        } catch {
            link.proxy.machineFailed(link.id)
            return
        }
        output.removeFirst(written)
    }
}

/// Bytes waiting, first in first out: appends at the end, removals from the front without moving
/// the rest each time (the storage is compacted once half of it is consumed).
struct ByteQueue {
    private var storage: [UInt8] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { count == 0 }

    mutating func append(_ bytes: some Collection<UInt8>) { storage.append(contentsOf: bytes) }

    /// The first `n` bytes (fewer if there are fewer).
    func prefix(_ n: Int) -> ArraySlice<UInt8> { storage[head..<(head + min(n, count))] }

    mutating func removeFirst(_ n: Int) {
        head += min(n, count)
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 65_536, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }

    func withUnsafeBytes<R>(from offset: Int, _ body: (UnsafeRawBufferPointer) throws(TransportError) -> R) throws(TransportError) -> R {
        let start = head + offset
        let result = storage.withUnsafeBytes { b -> Result<R, TransportError> in
            Result { () throws(TransportError) -> R in try body(UnsafeRawBufferPointer(rebasing: b[start...])) }
        }
        return try result.get()
    }
}
