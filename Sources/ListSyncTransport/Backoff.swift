/// Jittered exponential backoff: the wait before reconnect attempt `n` is drawn from
/// `[d/2, d]` where `d = min(initial · 2ⁿ, maximum)`. Pure: the randomness is handed in. Here, at
/// the bottom of the network stack, so that the peer links, the NATS client and the device
/// client's connection policy (`ListSync.ReconnectMachine`) share it.
public struct Backoff: Sendable, Equatable {
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
        let base = Self.nanoseconds(initial) * Double(1 << min(max(attempt, 0), 30))
        let capped = min(base, Self.nanoseconds(maximum))
        let jittered = capped / 2 + Double.random(in: 0...(capped / 2), using: &rng)
        return .nanoseconds(Int64(jittered))
    }

    /// `d` in nanoseconds (negative durations count as zero), as `ListSyncTCP`'s
    /// `Duration.nanoseconds`, which this target is below.
    static func nanoseconds(_ d: Duration) -> Double {
        let (s, a) = d.components
        if s < 0 { return 0 }
        return Double(UInt64(s) &* 1_000_000_000 &+ UInt64(a / 1_000_000_000))
    }
}
