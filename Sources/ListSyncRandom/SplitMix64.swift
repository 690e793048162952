/// SplitMix64 (Steele, Lea and Flood, 2014, in Vigna's reference form): a tiny, fast, seeded random
/// generator, so that every random test, simulation, fault plan and benchmark replays exactly from
/// its seed. The one copy in the package: `Tests/ListSyncTests/SplitMix64Tests.swift` checks it
/// against the reference implementation's published outputs. The same algorithm drives the Python
/// side of the benchmark comparison (`Benchmarks/WORKLOADS.md`).
///
/// Not for secrets: use `ListSyncCrypto.SecureRandom` for keys and nonces.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The golden-ratio increment added to the state at each step.
    public static let increment: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// The generator's whole state.
    public var state: UInt64

    /// A generator starting from `seed`.
    public init(seed: UInt64) { state = seed }

    /// A generator for `seed` mixed with `streams` (a connection's index, a direction, a run), so
    /// that each stream draws from a sequence of its own. With no streams it equals
    /// `init(seed:)`.
    ///
    /// - Complexity: O(`streams.count`).
    public init(seed: UInt64, streams: [UInt64]) {
        state = seed
        for s in streams { state = Self.mix(state &+ Self.increment &* (s &+ 1)) }
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= Self.increment
        return Self.mix(state)
    }

    /// SplitMix64's output function: a bijection of 64-bit values that spreads every input bit over
    /// the whole output (the finalizer a step applies to its state).
    public static func mix(_ x: UInt64) -> UInt64 {
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n` (`next() % n`; n > 0).
    public mutating func below(_ n: Int) -> Int {
        precondition(n > 0, "below(\(n)): the bound must be positive")
        return Int(next() % UInt64(n))
    }

    /// True with the given probability in percent.
    public mutating func chance(_ percent: Int) -> Bool { below(100) < percent }

    /// `count` random bytes, one draw each (the low byte of `next()`).
    ///
    /// - Complexity: O(`count`).
    public mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<max(0, count)).map { _ in UInt8(truncatingIfNeeded: next()) }
    }
}
