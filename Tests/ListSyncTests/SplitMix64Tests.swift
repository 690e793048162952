import Testing
import ListSyncRandom

/// The package's one seeded generator against the reference implementation (Vigna's
/// `splitmix64.c`): a mistyped constant in a copy of it once went unnoticed, because every test
/// that used the copy passed with any stream.
@Suite struct SplitMix64Tests {
    /// The first outputs of the reference `splitmix64.c` from the state 1477776061723855037, as
    /// published with the reference implementation's ports (the Rust `rand_xoshiro` crate tests
    /// its `SplitMix64` against these).
    static let referenceSeed: UInt64 = 1_477_776_061_723_855_037
    static let referenceOutputs: [UInt64] = [
        1_985_237_415_132_408_290, 2_979_275_885_539_914_483, 13_511_426_838_097_143_398,
        8_488_337_342_461_049_707, 15_141_737_807_933_549_159, 17_093_170_987_380_407_015,
        16_389_528_042_912_955_399, 13_177_319_091_862_933_652, 10_841_969_400_225_389_492,
        17_094_824_097_954_834_098,
    ]

    @Test("the outputs of the reference implementation, in order")
    func publishedVectors() {
        var rng = SplitMix64(seed: Self.referenceSeed)
        #expect(Self.referenceOutputs.map { _ in rng.next() } == Self.referenceOutputs)
    }

    @Test("no streams is the plain seed; each stream draws a sequence of its own")
    func streams() {
        var plain = SplitMix64(seed: 42), none = SplitMix64(seed: 42, streams: [])
        #expect((0..<4).map { _ in plain.next() } == (0..<4).map { _ in none.next() })
        var a = SplitMix64(seed: 42, streams: [1]), b = SplitMix64(seed: 42, streams: [2])
        #expect(a.next() != b.next())
    }

    @Test("below stays in its bound, bytes gives the count asked for")
    func helpers() {
        var rng = SplitMix64(seed: 7)
        for n in 1...50 { #expect((0..<n).contains(rng.below(n))) }
        #expect(rng.bytes(0).isEmpty && rng.bytes(17).count == 17)
    }
}
