/// The raw Poly1305 one-time authenticator (RFC 8439 §2.5), with 26-bit limbs (after poly1305-donna).
///
/// A key must authenticate one message only: protocol code should use `ChaCha20Poly1305`, which derives
/// a fresh Poly1305 key per nonce. Exposed for the RFC's test vectors.
public struct Poly1305: Sendable {
    /// The one-time key length in bytes (r ‖ s).
    public static let keySize = 32
    /// The tag length in bytes.
    public static let tagSize = 16

    // r (clamped) and 5·r in 26-bit limbs, the accumulator h, and s.
    var r0, r1, r2, r3, r4: UInt64
    var s1, s2, s3, s4: UInt64
    var h0: UInt64 = 0, h1: UInt64 = 0, h2: UInt64 = 0, h3: UInt64 = 0, h4: UInt64 = 0
    var pad0, pad1, pad2, pad3: UInt64
    /// A partial 16-byte block not yet absorbed (`buffered` bytes of it).
    var buffer: (UInt64, UInt64) = (0, 0)
    var buffered = 0

    /// An authenticator under the one-time key `key` (32 bytes: r, then s).
    ///
    /// - Throws: `CryptoError.invalidKeySize` unless `key` has 32 bytes.
    public init(key: some Collection<UInt8>) throws(CryptoError) {
        guard key.count == Self.keySize else { throw .invalidKeySize(key.count, expected: Self.keySize) }
        self = withBytes(key) { Poly1305(keyAt: $0.baseAddress!) }
    }

    /// An authenticator under the 32 bytes at `key`.
    init(keyAt key: UnsafeRawPointer) {
        r0 = UInt64(loadLE32(key, 0) & 0x3ff_ffff)
        r1 = UInt64((loadLE32(key, 3) >> 2) & 0x3ff_ff03)
        r2 = UInt64((loadLE32(key, 6) >> 4) & 0x3ff_c0ff)
        r3 = UInt64((loadLE32(key, 9) >> 6) & 0x3f0_3fff)
        r4 = UInt64((loadLE32(key, 12) >> 8) & 0x00f_ffff)
        s1 = r1 &* 5; s2 = r2 &* 5; s3 = r3 &* 5; s4 = r4 &* 5
        pad0 = UInt64(loadLE32(key, 16)); pad1 = UInt64(loadLE32(key, 20))
        pad2 = UInt64(loadLE32(key, 24)); pad3 = UInt64(loadLE32(key, 28))
    }

    /// The 16-byte tag of `message` under the one-time `key` (32 bytes).
    ///
    /// - Throws: `CryptoError.invalidKeySize` unless `key` has 32 bytes.
    /// - Complexity: O(n), where n is the length of `message`.
    public static func authenticate(message: some Collection<UInt8>, key: some Collection<UInt8>) throws(CryptoError) -> [UInt8] {
        var mac = try Poly1305(key: key)
        mac.update(message)
        return mac.finalize()
    }

    /// Feeds message bytes.
    ///
    /// - Complexity: O(n), where n is the length of `data`.
    public mutating func update(_ data: some Collection<UInt8>) {
        withBytes(data) { b in
            guard var p = b.baseAddress, b.count > 0 else { return }
            var n = b.count
            if buffered > 0 {
                let take = min(n, 16 - buffered)
                withUnsafeMutableBytes(of: &buffer) { (b: UnsafeMutableRawBufferPointer) in
                    (b.baseAddress! + buffered).copyMemory(from: p, byteCount: take)
                }
                buffered += take; p += take; n -= take
                guard buffered == 16 else { return }
                let block = buffer
                withUnsafeBytes(of: block) { blocks($0.baseAddress!, count: 16, hibit: 1 << 24) }
                buffered = 0
            }
            let full = n & ~15
            if full > 0 { blocks(p, count: full, hibit: 1 << 24) }
            if n > full {
                withUnsafeMutableBytes(of: &buffer) { (b: UnsafeMutableRawBufferPointer) in
                    b.baseAddress!.copyMemory(from: p + full, byteCount: n - full)
                }
                buffered = n - full
            }
        }
    }

    /// The tag of everything fed in (16 bytes).
    public consuming func finalize() -> [UInt8] {
        if buffered > 0 {
            // The last partial block: a 1 byte after the message, zeros up to 16, no 2^128 bit.
            var block = buffer
            let n = buffered
            withUnsafeMutableBytes(of: &block) { b in
                b[n] = 1
                for i in (n + 1)..<16 { b[i] = 0 }
            }
            withUnsafeBytes(of: block) { blocks($0.baseAddress!, count: 16, hibit: 0) }
        }
        return [UInt8](unsafeUninitializedCapacity: Self.tagSize) { out, initialized in
            tag(into: UnsafeMutableRawPointer(out.baseAddress!))
            initialized = Self.tagSize
        }
    }

    /// Absorbs `count` bytes (a multiple of 16) at `p`, then a final partial block zero-padded to 16 bytes
    /// as a full block (the AEAD's `pad16`, RFC 8439 §2.8).
    ///
    /// - Complexity: O(count).
    @inline(__always)
    mutating func absorbPadded(_ p: UnsafeRawPointer?, count: Int) {
        guard let p, count > 0 else { return }
        let full = count & ~15
        if full > 0 { blocks(p, count: full, hibit: 1 << 24) }
        if count > full {
            var last: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &last) { $0.baseAddress!.copyMemory(from: p + full, byteCount: count - full) }
            withUnsafeBytes(of: last) { blocks($0.baseAddress!, count: 16, hibit: 1 << 24) }
        }
    }

    /// Absorbs the 16-byte blocks at `p` (`count` a multiple of 16); `hibit` is 2^24 (the 2^128 bit in
    /// limb 4) for full blocks and 0 for the padded last block of `finalize`.
    ///
    /// - Complexity: O(count).
    mutating func blocks(_ p: UnsafeRawPointer, count: Int, hibit: UInt64) {
        let mask: UInt64 = 0x3ff_ffff
        let (r0, r1, r2, r3, r4, s1, s2, s3, s4) = (r0, r1, r2, r3, r4, s1, s2, s3, s4)
        var (h0, h1, h2, h3, h4) = (h0, h1, h2, h3, h4)
        var offset = 0
        while offset < count {
            let m = p + offset
            h0 &+= UInt64(loadLE32(m, 0)) & mask
            h1 &+= UInt64(loadLE32(m, 3) >> 2) & mask
            h2 &+= UInt64(loadLE32(m, 6) >> 4) & mask
            h3 &+= UInt64(loadLE32(m, 9) >> 6) & mask
            h4 &+= UInt64(loadLE32(m, 12) >> 8) | hibit

            let d0 = h0 &* r0 &+ h1 &* s4 &+ h2 &* s3 &+ h3 &* s2 &+ h4 &* s1
            var d1 = h0 &* r1 &+ h1 &* r0 &+ h2 &* s4 &+ h3 &* s3 &+ h4 &* s2
            var d2 = h0 &* r2 &+ h1 &* r1 &+ h2 &* r0 &+ h3 &* s4 &+ h4 &* s3
            var d3 = h0 &* r3 &+ h1 &* r2 &+ h2 &* r1 &+ h3 &* r0 &+ h4 &* s4
            var d4 = h0 &* r4 &+ h1 &* r3 &+ h2 &* r2 &+ h3 &* r1 &+ h4 &* r0

            var c = d0 >> 26; h0 = d0 & mask
            d1 &+= c; c = d1 >> 26; h1 = d1 & mask
            d2 &+= c; c = d2 >> 26; h2 = d2 & mask
            d3 &+= c; c = d3 >> 26; h3 = d3 & mask
            d4 &+= c; c = d4 >> 26; h4 = d4 & mask
            h0 &+= c &* 5; c = h0 >> 26; h0 &= mask
            h1 &+= c
            offset &+= 16
        }
        (self.h0, self.h1, self.h2, self.h3, self.h4) = (h0, h1, h2, h3, h4)
    }

    /// Fully reduces h modulo 2^130 - 5 (constant time), adds s and writes the 16-byte tag to `out`.
    func tag(into out: UnsafeMutableRawPointer) {
        let mask: UInt64 = 0x3ff_ffff
        var (h0, h1, h2, h3, h4) = (h0, h1, h2, h3, h4)
        var c = h1 >> 26; h1 &= mask
        h2 &+= c; c = h2 >> 26; h2 &= mask
        h3 &+= c; c = h3 >> 26; h3 &= mask
        h4 &+= c; c = h4 >> 26; h4 &= mask
        h0 &+= c &* 5; c = h0 >> 26; h0 &= mask
        h1 &+= c

        // g = h + 5 - 2^130; keep g when it is not negative (h >= p).
        var g0 = h0 &+ 5; c = g0 >> 26; g0 &= mask
        var g1 = h1 &+ c; c = g1 >> 26; g1 &= mask
        var g2 = h2 &+ c; c = g2 >> 26; g2 &= mask
        var g3 = h3 &+ c; c = g3 >> 26; g3 &= mask
        var g4 = h4 &+ c &- (1 << 26)
        var select = (g4 >> 63) &- 1  // all ones when g4 >= 0
        g0 &= select; g1 &= select; g2 &= select; g3 &= select; g4 &= select
        select = ~select
        h0 = (h0 & select) | g0
        h1 = (h1 & select) | g1
        h2 = (h2 & select) | g2
        h3 = (h3 & select) | g3
        h4 = (h4 & select) | g4

        // h mod 2^128 in four 32-bit words, plus s.
        let w0 = (h0 | (h1 << 26)) & 0xffff_ffff
        let w1 = ((h1 >> 6) | (h2 << 20)) & 0xffff_ffff
        let w2 = ((h2 >> 12) | (h3 << 14)) & 0xffff_ffff
        let w3 = ((h3 >> 18) | (h4 << 8)) & 0xffff_ffff
        var f = w0 &+ pad0; storeLE32(out, 0, UInt32(truncatingIfNeeded: f))
        f = w1 &+ pad1 &+ (f >> 32); storeLE32(out, 4, UInt32(truncatingIfNeeded: f))
        f = w2 &+ pad2 &+ (f >> 32); storeLE32(out, 8, UInt32(truncatingIfNeeded: f))
        f = w3 &+ pad3 &+ (f >> 32); storeLE32(out, 12, UInt32(truncatingIfNeeded: f))
    }
}
