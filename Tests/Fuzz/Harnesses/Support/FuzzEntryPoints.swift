#if canImport(Glibc)
import Glibc
#endif

// `FuzzInput` and `split(_:by:)`: Sources/ListSyncTestSupport/FuzzInput.swift (build.sh compiles it
// in), shared with the suites that replay the corpora.

/// Stops the fuzzer with a message (a broken property, not a thrown decoding error).
func fuzzFailure(_ message: String, file: StaticString = #file, line: UInt = #line) -> Never {
    fatalError("fuzz property failed: \(message)", file: file, line: line)
}

// MARK: - libFuzzer entry points
//
// Each harness defines `fuzzOne(_ bytes: [UInt8])` (one input; it must not crash, whatever the
// bytes) and `fuzzSeeds() -> [[UInt8]]` (valid inputs made with the real encoders).

@_cdecl("LLVMFuzzerTestOneInput")
public func llvmFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { fuzzOne([]); return 0 }
    fuzzOne(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// With `FUZZ_WRITE_SEEDS=<folder>` in the environment, writes the harness's seeds there as
/// `seed-<n>` and exits, instead of fuzzing (Tests/Fuzz/run.sh does this for an empty corpus).
@_cdecl("LLVMFuzzerInitialize")
public func llvmFuzzerInitialize(_ argc: UnsafeMutablePointer<CInt>?,
                                 _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    guard let folder = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }), !folder.isEmpty else { return 0 }
    for (n, seed) in fuzzSeeds().enumerated() {
        let path = folder + "/seed-\(n)"
        guard let f = fopen(path, "wb") else { fuzzFailure("cannot write \(path)") }
        _ = seed.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
        // Every seed must pass through the harness cleanly.
        fuzzOne(seed)
    }
    exit(0)
}
