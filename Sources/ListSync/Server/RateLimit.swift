/// A token bucket: `rate` tokens a second, at most `burst` held; one token per batch of
/// operations. Pure (the caller passes the time), so it is tested without a clock.
///
/// The daemon keeps one per connection: a client (or peer) with the key that sends batches faster
/// than `rate` for longer than `burst` allows has the excess refused with a `.limit` error that
/// says so; nothing of a refused batch is applied, logged or forwarded, and the other connections
/// are not slowed (each has its own bucket and its own task). Refusing, rather than pausing the
/// socket, keeps the daemon's memory bounded whatever the sender does: a refused batch costs a
/// decode and a short reply.
public struct RateLimit: Sendable, Equatable {
    /// Batches a second, sustained.
    public var rate: Double
    /// Batches at once, after a quiet time.
    public var burst: Double

    /// `rate` batches a second with bursts of `burst`.
    public init(batchesPerSecond rate: Double, burst: Double) {
        (self.rate, self.burst) = (rate, burst)
    }

    /// The default: 1,000 batches a second, bursts of 5,000 (an interactive client sends a few a
    /// second; an import or a peer catching up sends frames of up to 512 operations, one after
    /// another, each waiting for its acknowledgement).
    public static let standard = RateLimit(batchesPerSecond: 1_000, burst: 5_000)

    /// The daemon's default limit on `presence` messages per connection: 20 a second, bursts of
    /// 40 (twice what a reference client sends while dragging in two documents: it coalesces to
    /// at most 10 a second per document, ``PresenceOutbox``). The excess is dropped silently.
    public static let presence = RateLimit(batchesPerSecond: 20, burst: 40)
}

/// The state of one connection's bucket.
public struct TokenBucket: Sendable {
    public let limit: RateLimit
    public private(set) var tokens: Double
    private var last: UInt64

    /// A full bucket at time `now` (nanoseconds).
    public init(_ limit: RateLimit, now: UInt64) {
        self.limit = limit
        tokens = limit.burst
        last = now
    }

    /// Takes one token at time `now` (nanoseconds): false if there is none (the batch is refused).
    public mutating func take(now: UInt64) -> Bool {
        let elapsed = Double(now &- last) / 1e9
        last = now
        tokens = min(limit.burst, tokens + elapsed * limit.rate)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}

extension Optional where Wrapped == TokenBucket {
    /// Takes one token at time `now` from the bucket, if there is one: false only when there is a
    /// bucket and it is empty (no bucket: no limit).
    public mutating func allows(now: UInt64) -> Bool {
        guard var b = self else { return true }
        defer { self = b }
        return b.take(now: now)
    }
}
