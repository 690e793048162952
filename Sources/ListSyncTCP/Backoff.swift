import ListSyncTransport

/// Jittered exponential backoff: the wait before reconnect attempt `n` is drawn from
/// `[d/2, d]` where `d = min(initial · 2ⁿ, maximum)`.
public struct Backoff: Sendable {
    /// The first wait (before jitter).
    public var initial: Duration
    /// The longest wait.
    public var maximum: Duration

    /// 0.5 s doubling to 15 s.
    public init(initial: Duration = .milliseconds(500), maximum: Duration = .seconds(15)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The wait before attempt `attempt` (0-based), jittered with `rng`.
    public func delay(attempt: Int, using rng: inout some RandomNumberGenerator) -> Duration {
        let base = Double(initial.nanoseconds) * Double(1 << min(attempt, 30))
        let capped = min(base, Double(maximum.nanoseconds))
        let jittered = capped / 2 + Double.random(in: 0...(capped / 2), using: &rng)
        return .nanoseconds(Int64(jittered))
    }
}

