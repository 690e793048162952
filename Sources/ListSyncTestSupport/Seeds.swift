import Foundation

/// The seeds a seeded test runs: only `$one` when that variable is set (a replay), else
/// `0..<$count`, or `0..<standard` when `count` is unset.
///
/// `seeds(one: "LISTSYNC_FUZZ_SEED", count: "LISTSYNC_FUZZ_SEEDS", standard: 1_000)`
public func seeds(one: String, count: String, standard: UInt64) -> [UInt64] {
    let environment = ProcessInfo.processInfo.environment
    if let seed = environment[one].flatMap(UInt64.init) { return [seed] }
    return Array(0..<(environment[count].flatMap(UInt64.init) ?? standard))
}
