// The simulator's generator is the package's one SplitMix64: every module that imports the
// simulator (the tests, the benchmarks, the CLI's `simulate`) sees it without a second import.
@_exported import ListSyncRandom
