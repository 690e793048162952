#if canImport(Glibc)
import Glibc
#endif

/// A harness's input as a stream of choices: the fuzzer's bytes read front to back, zeros once
/// they run out (so every input, however short, is a valid sequence of choices).
struct FuzzInput {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(_ data: UnsafePointer<UInt8>, _ size: Int) {
        bytes = Array(UnsafeBufferPointer(start: data, count: size))
    }

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }
    var remaining: Int { max(0, bytes.count - offset) }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A little-endian u16.
    mutating func u16() -> Int { Int(byte()) | Int(byte()) << 8 }

    /// Up to `n` bytes (fewer at the end).
    mutating func take(_ n: Int) -> [UInt8] {
        let n = min(max(0, n), remaining)
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }

    /// Everything left.
    mutating func rest() -> [UInt8] { take(remaining) }
}

/// Cuts `bytes` into pieces whose sizes come from `sizes` (cycled; a size byte s gives a piece of
/// s + 1 bytes, so every split is reachable). With no size bytes: one piece.
func split(_ bytes: [UInt8], by sizes: [UInt8]) -> [ArraySlice<UInt8>] {
    guard !sizes.isEmpty else { return [bytes[...]] }
    var pieces: [ArraySlice<UInt8>] = []
    var at = 0, k = 0
    while at < bytes.count {
        let n = min(Int(sizes[k % sizes.count]) + 1, bytes.count - at)
        pieces.append(bytes[at..<at + n])
        at += n
        k += 1
    }
    return pieces
}

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
