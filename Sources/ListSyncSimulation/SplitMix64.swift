import ListCRDT
import ListSync
import ListTable
/// SplitMix64: a tiny, fast, seeded random generator, so that every random test, simulation and
/// benchmark replays exactly from its seed. The same algorithm drives the Python side of the
/// benchmark comparison (`Benchmarks/WORKLOADS.md`).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's whole state.
    public var state: UInt64

    /// A generator starting from `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n` (`next() % n`; n > 0).
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }

    /// True with the given probability in percent.
    public mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}
