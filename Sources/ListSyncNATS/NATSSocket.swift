#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ListSyncTransport
import ListSyncTCP

/// The socket of one connection attempt to a NATS server, on the event loop's thread: plain TCP
/// through the transport's syscall funnel (`System`), bytes into a ``NATSClientMachine``, its
/// actions out to the owner. Used by ``NATSConnection`` only.
final class NATSSocket: EventHandler {
    let fd: Int32
    let loop: EventLoop
    var machine: NATSClientMachine
    /// Called with each action that is not a write (writes are done here), and once with
    /// `.close` when the socket closes for any reason.
    var onAction: ((NATSClientMachine.Action) -> Void)?
    private(set) var closed = false
    private var connecting = false
    private var watchingWrites = false
    private var flushScheduled = false
    private var outbound = OutboundBuffer()
    /// Bytes queued and not yet written.
    var queued: Int { outbound.queued }

    /// Opens a non-blocking socket for `address` (not yet connecting).
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` from `socket(2)` or `setsockopt(2)`.
    init(address: SocketAddress, machine: NATSClientMachine, loop: EventLoop) throws(TransportError) {
        fd = try System.socket(family: address.family)
        do { try System.setNoDelay(fd) } catch {
            System.close(fd)
            throw error
        }
        self.machine = machine
        self.loop = loop
    }

    /// Registers with the loop and starts connecting to `address`. Loop thread only.
    func start(connectingTo address: SocketAddress) {
        assert(loop.inLoop)
        do {
            try loop.register(fd, self, writable: true)
            watchingWrites = true
            connecting = !(try System.connect(fd, address))
        } catch {
            close("connect to \(address): \(error)")
        }
    }

    // MARK: EventHandler

    func readable() {
        while !closed {
            let bytes: UnsafeRawBufferPointer?
            do { bytes = try loop.read(fd) } catch {
                close("read: \(error)")
                return
            }
            guard let bytes else { return }
            if bytes.isEmpty {
                close("the server closed the connection")
                return
            }
            // The machine copies the bytes before anything else can read into the loop's buffer.
            perform(machine.receive(bytes))
            if bytes.count < EventLoop.readSize { return }
        }
    }

    func writable() {
        if closed { return }
        if connecting {
            connecting = false
            do {
                let e = try System.socketError(fd)
                if e != 0 { throw TransportError.system(call: "connect", errno: e) }
            } catch {
                close("connect: \(error)")
                return
            }
        }
        flush()
    }

    // MARK: Actions and writes

    /// Runs the machine's actions: writes here, the rest to the owner.
    func perform(_ actions: [NATSClientMachine.Action]) {
        for action in actions {
            if closed { return }
            switch action {
            case let .write(bytes): write(bytes)
            case let .close(reason): close(reason)
            default: onAction?(action)
            }
        }
    }

    /// Queues `bytes`; they leave at the end of the loop's turn (a turn's writes in one call).
    func write(_ bytes: [UInt8]) {
        guard !closed else { return }
        outbound.append(bytes)
        if !connecting, !flushScheduled, !watchingWrites {
            flushScheduled = true
            loop.atEndOfTurn { [self] in
                flushScheduled = false
                if !closed { flush() }
            }
        }
    }

    private func flush() {
        if case let .failure(error) = outbound.write(to: fd) {
            close("write: \(error)")
            return
        }
        let want = outbound.queued > 0
        if want != watchingWrites {
            watchingWrites = want
            loop.setWritable(fd, want)
        }
    }

    /// Closes the socket (once) and tells the owner. Loop thread only.
    func close(_ reason: String) {
        guard !closed else { return }
        closed = true
        machine.markClosed()
        loop.deregister(fd)
        System.close(fd)
        outbound.clear()
        let owner = onAction
        onAction = nil
        owner?(.close(reason))
    }
}
