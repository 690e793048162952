// Shared by the libFuzzer harnesses (Tests/Fuzz/build.sh compiles this file into each of them)
// and by the suites that replay their corpora under `swift test`, so that both read an input the
// same way. Standard library only: the harnesses link no other module for it.

/// A harness's input as a stream of choices: the fuzzer's bytes read front to back, zeros once
/// they run out (so every input, however short, is a valid sequence of choices).
public struct FuzzInput {
    /// The whole input.
    public let bytes: [UInt8]
    /// How many bytes have been read (may pass `bytes.count`: reads past the end give zeros).
    public private(set) var offset = 0

    /// An input reading `bytes` from the front.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// True once every byte has been read.
    public var isAtEnd: Bool { offset >= bytes.count }
    /// How many bytes are left to read.
    public var remaining: Int { max(0, bytes.count - offset) }

    /// The next byte, or 0 past the end.
    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A little-endian u16 (zeros past the end).
    public mutating func u16() -> Int { Int(byte()) | Int(byte()) << 8 }

    /// Up to `n` bytes (fewer at the end).
    ///
    /// - Complexity: O(`n`).
    public mutating func take(_ n: Int) -> [UInt8] {
        let n = min(max(0, n), remaining)
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }

    /// Everything left.
    ///
    /// - Complexity: O(`remaining`).
    public mutating func rest() -> [UInt8] { take(remaining) }
}

/// Cuts `bytes` into pieces whose sizes come from `sizes` (cycled; a size byte s gives a piece of
/// s + 1 bytes, so every split is reachable). With no size bytes: one piece.
///
/// - Complexity: O(`bytes.count`).
public func split(_ bytes: [UInt8], by sizes: [UInt8]) -> [ArraySlice<UInt8>] {
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
