import Foundation
import ListSyncTCP

/// Reads a stream's messages on one subject filter, from a sequence, in order and without gaps,
/// then follows new ones as they are stored: JetStream's "ordered consumer".
///
/// An ephemeral push consumer (no acks, flow control, idle heartbeats) delivers to an inbox of
/// the connection. When a delivery skips a consumer sequence, when heartbeats stop, or after
/// the connection reconnects (the consumer may have lived on a server that is gone), the
/// consumer is made again from the sequence after the last one delivered: a message may never
/// be skipped; none is delivered twice.
public final class OrderedConsumer: @unchecked Sendable {
    // @unchecked Sendable: the mutable state is touched on the connection's loop thread only
    // (the deliveries, timers and listener run there; `start` and `stop` hop there).

    /// The stream's messages, in stream order from the start sequence; finishes on ``stop()``.
    public let messages: AsyncStream<StoredMessage>
    private let continuation: AsyncStream<StoredMessage>.Continuation
    private let js: JetStream
    private let stream: String
    private let filter: String
    private let heartbeat: Duration
    private var nextStreamSequence: UInt64
    private var nextConsumerSequence: UInt64 = 1
    private var sid: UInt64?
    private var generation = 0
    private var lastActivity = EventLoop.now()
    private var listener: UInt64?
    private var watchdog: TimerQueue.ID?
    private var stopped = false
    private var resetting = false
    /// How many times the consumer was made again (after a gap, silence or a reconnection).
    public private(set) var resets = 0

    private init(js: JetStream, stream: String, filter: String, from sequence: UInt64, heartbeat: Duration) {
        (messages, continuation) = AsyncStream.makeStream(of: StoredMessage.self)
        self.js = js
        self.stream = stream
        self.filter = filter
        self.heartbeat = heartbeat
        nextStreamSequence = max(sequence, 1)
    }

    /// Starts reading `stream`'s messages on `filter` from `sequence`.
    ///
    /// - Throws: ``JetStreamError`` if the first consumer cannot be made (no such stream).
    public static func start(_ js: JetStream, stream: String, filter: String, from sequence: UInt64,
                             heartbeat: Duration = .seconds(2)) async throws(JetStreamError) -> OrderedConsumer {
        let c = OrderedConsumer(js: js, stream: stream, filter: filter, from: sequence, heartbeat: heartbeat)
        await js.connection.onLoop { [c] in
            c.listener = js.connection.addListener { [weak c] event in
                if case .reconnected = event { c?.reset() }
            }
            c.armWatchdog()
        }
        do { try await c.makeConsumer() } catch {
            await c.stop()
            throw error
        }
        return c
    }

    /// Stops reading; the stream of messages finishes.
    public func stop() async {
        let old: UInt64? = await js.connection.onLoop { [self] in
            stopped = true
            if let l = listener { js.connection.removeListener(l) }
            if let w = watchdog { js.connection.loop.cancel(w) }
            continuation.finish()
            return sid
        }
        if let old { await js.connection.unsubscribe(old) }
    }

    /// Makes a consumer from `nextStreamSequence`, delivering to a new inbox subscription.
    private func makeConsumer() async throws(JetStreamError) {
        let connection = js.connection
        let (gen, start): (Int, UInt64) = await connection.onLoop { [self] in
            generation += 1
            nextConsumerSequence = 1
            lastActivity = EventLoop.now()
            return (generation, nextStreamSequence)
        }
        let inbox = connection.inboxPrefix + ".c" + String(UInt64.random(in: 1...UInt64.max))
        let newSID: UInt64
        do {
            newSID = try await connection.subscribe(inbox, deliver: { [weak self] m in self?.receive(m, generation: gen) })
        } catch { throw .nats(error) }
        let old: UInt64? = await connection.onLoop { [self] in
            defer { sid = newSID }
            return sid
        }
        if let old { await connection.unsubscribe(old) }
        let config: [String: Any] = [
            "deliver_subject": inbox, "filter_subject": filter, "deliver_policy": "by_start_sequence",
            "opt_start_seq": start, "ack_policy": "none", "flow_control": true, "mem_storage": true,
            "idle_heartbeat": Int64(heartbeat.nanoseconds), "num_replicas": 1,
            "inactive_threshold": Int64(5_000_000_000), "max_deliver": 1,
        ]
        _ = try await js.call("CONSUMER.CREATE.\(stream)", ["stream_name": stream, "config": config])
    }

    /// One delivery (loop thread).
    private func receive(_ m: NATSMessage, generation gen: Int) {
        guard !stopped, gen == generation else { return }
        lastActivity = EventLoop.now()
        if let status = m.headers?.status {
            // 100: an idle heartbeat or a flow-control request (answered on its reply subject).
            if status == 100, let reply = m.replyTo, !reply.isEmpty {
                try? js.connection.send((try? NATSCommand.publish(reply, payload: [])) ?? [])
            }
            if status == 100, let last = m.headers?["Nats-Last-Consumer"], let n = UInt64(last), n >= nextConsumerSequence {
                reset()
            }
            return
        }
        guard let reply = m.replyTo, let (streamSeq, consumerSeq) = Self.sequences(reply) else { return }
        if consumerSeq != nextConsumerSequence {
            reset()
            return
        }
        nextConsumerSequence += 1
        guard streamSeq >= nextStreamSequence else { return }
        nextStreamSequence = streamSeq + 1
        continuation.yield(StoredMessage(subject: m.subject, sequence: streamSeq, headers: m.headers, payload: m.payload))
    }

    /// The stream and consumer sequences in a `$JS.ACK.…` reply subject (both token layouts).
    static func sequences(_ reply: String) -> (stream: UInt64, consumer: UInt64)? {
        let t = reply.split(separator: ".", omittingEmptySubsequences: false)
        guard t.count >= 9, t[0] == "$JS", t[1] == "ACK" else { return nil }
        // v1: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
        // v2: $JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<token>]
        let base = t.count == 9 ? 5 : 7
        guard t.count > base + 1, let s = UInt64(t[base]), let c = UInt64(t[base + 1]) else { return nil }
        return (s, c)
    }

    /// Makes the consumer again from the next sequence (once at a time). Loop thread.
    private func reset() {
        guard !stopped, !resetting else { return }
        resetting = true
        resets += 1
        generation += 1
        Task { [self] in
            var delay = Duration.milliseconds(50)
            while true {
                do {
                    try await makeConsumer()
                    break
                } catch {
                    if await js.connection.onLoop({ [self] in stopped }) { break }
                    try? await Task.sleep(for: delay)
                    delay = min(delay * 2, .seconds(2))
                }
            }
            await js.connection.onLoop { [self] in resetting = false }
        }
    }

    private func armWatchdog() {
        watchdog = js.connection.loop.schedule(after: heartbeat) { [weak self] in
            guard let self, !self.stopped else { return }
            if EventLoop.now() &- self.lastActivity > 3 * self.heartbeat.nanoseconds { self.reset() }
            self.armWatchdog()
        }
    }
}
