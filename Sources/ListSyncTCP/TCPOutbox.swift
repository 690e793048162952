/// Frames for several connections, handed to their event loops with one
/// ``EventLoop/execute(_:)`` per loop instead of one per frame.
///
/// A document's fan-out sends each batch to every subscriber: queued frame by frame, that is one
/// pass through the loop's task-queue lock per subscriber, from the document's own thread, while
/// every other document and the loop take the same lock (under load most of the daemon's CPU went
/// to that lock's contention). An outbox takes it once per loop for the whole fan-out.
///
/// Frames keep their order per connection (one task runs them in the order queued). Call
/// ``flush()`` before anything that must follow the frames (an await, another action).
public struct TCPOutbox {
    private var groups: [(loop: EventLoop, sends: [(socket: SocketConnection, frame: [UInt8])])] = []

    /// An empty outbox.
    public init() {}

    /// Whether nothing is queued.
    public var isEmpty: Bool { groups.isEmpty }

    /// Queues `frame` for `transport`'s peer, as ``TCPTransport/enqueue(_:)`` does (false, and
    /// nothing queued, over ``TCPTransport/maxFrame`` or once the connection is closed); it leaves
    /// at the next ``flush()``.
    ///
    /// - Complexity: O(l) for l distinct loops in the outbox (one, in a daemon).
    @discardableResult
    public mutating func enqueue(_ frame: [UInt8], on transport: TCPTransport) -> Bool {
        guard frame.count <= transport.maxFrame, transport.isOpen else { return false }
        if let i = groups.firstIndex(where: { $0.loop === transport.loop }) {
            groups[i].sends.append((transport.socket, frame))
        } else {
            groups.append((transport.loop, [(transport.socket, frame)]))
        }
        return true
    }

    /// Hands every queued frame to its loop (one task per loop) and empties the outbox.
    ///
    /// - Complexity: O(f) for f queued frames.
    public mutating func flush() {
        for group in groups {
            let sends = group.sends
            group.loop.execute {
                for send in sends { send.socket.sendData(send.frame) }
            }
        }
        groups = []
    }
}
