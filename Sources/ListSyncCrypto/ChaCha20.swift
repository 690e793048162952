/// The raw ChaCha20 stream cipher (RFC 8439 §2.1–§2.4): 256-bit key, 96-bit nonce, 32-bit block counter.
///
/// Unauthenticated: protocol code should use `ChaCha20Poly1305`. Exposed for the RFC's test vectors and tools.
public enum ChaCha20 {
    /// The key length in bytes.
    public static let keySize = 32
    /// The nonce length in bytes.
    public static let nonceSize = 12
    /// The keystream block length in bytes.
    public static let blockSize = 64

    /// The quarter round of RFC 8439 §2.1 on four state words.
    public static func quarterRound(
        _ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32
    ) -> (UInt32, UInt32, UInt32, UInt32) {
        var (a, b, c, d) = (a, b, c, d)
        qr(&a, &b, &c, &d)
        return (a, b, c, d)
    }

    /// The 64-byte keystream block for `counter` (the block function of RFC 8439 §2.3).
    ///
    /// - Throws: `CryptoError.invalidKeySize` unless `key` has 32 bytes, `.invalidNonceSize` unless
    ///   `nonce` has 12.
    public static func block(
        key: some Collection<UInt8>, counter: UInt32, nonce: some Collection<UInt8>
    ) throws(CryptoError) -> [UInt8] {
        let core = try Core(key: key, nonce: nonce)
        return [UInt8](unsafeUninitializedCapacity: blockSize) { out, initialized in
            core.keystream(counter: counter, into: UnsafeMutableRawPointer(out.baseAddress!))
            initialized = blockSize
        }
    }

    /// `data` XORed with the keystream starting at block `counter` (encryption and decryption alike,
    /// RFC 8439 §2.4).
    ///
    /// - Throws: `CryptoError.invalidKeySize` / `.invalidNonceSize` for a wrongly sized key or nonce.
    /// - Complexity: O(n), where n is the length of `data`.
    public static func encrypt(
        _ data: some Collection<UInt8>, key: some Collection<UInt8>, counter: UInt32, nonce: some Collection<UInt8>
    ) throws(CryptoError) -> [UInt8] {
        let core = try Core(key: key, nonce: nonce)
        return withBytes(data) { input in
            [UInt8](unsafeUninitializedCapacity: input.count) { out, initialized in
                if input.count > 0 {
                    core.xor(input.baseAddress!, into: UnsafeMutableRawPointer(out.baseAddress!), count: input.count, counter: counter)
                }
                initialized = input.count
            }
        }
    }

    @inline(__always)
    static func rotl(_ x: UInt32, _ n: UInt32) -> UInt32 { (x &<< n) | (x &>> (32 &- n)) }

    @inline(__always)
    static func qr(_ a: inout UInt32, _ b: inout UInt32, _ c: inout UInt32, _ d: inout UInt32) {
        a &+= b; d ^= a; d = rotl(d, 16)
        c &+= d; b ^= c; b = rotl(b, 12)
        a &+= b; d ^= a; d = rotl(d, 8)
        c &+= d; b ^= c; b = rotl(b, 7)
    }

    /// A key and nonce as state words: the fixed part of the ChaCha20 state (no heap storage).
    struct Core: Sendable {
        var k0, k1, k2, k3, k4, k5, k6, k7: UInt32
        var n0, n1, n2: UInt32

        /// The state for `key` (32 bytes) and `nonce` (12 bytes).
        init(key: some Collection<UInt8>, nonce: some Collection<UInt8>) throws(CryptoError) {
            guard key.count == keySize else { throw .invalidKeySize(key.count, expected: keySize) }
            guard nonce.count == nonceSize else { throw .invalidNonceSize(nonce.count, expected: nonceSize) }
            let k = withBytes(key) { p in
                (loadLE32(p.baseAddress!, 0), loadLE32(p.baseAddress!, 4), loadLE32(p.baseAddress!, 8),
                 loadLE32(p.baseAddress!, 12), loadLE32(p.baseAddress!, 16), loadLE32(p.baseAddress!, 20),
                 loadLE32(p.baseAddress!, 24), loadLE32(p.baseAddress!, 28))
            }
            (k0, k1, k2, k3, k4, k5, k6, k7) = k
            (n0, n1, n2) = withBytes(nonce) { p in
                (loadLE32(p.baseAddress!, 0), loadLE32(p.baseAddress!, 4), loadLE32(p.baseAddress!, 8))
            }
        }

        /// The state for key words `key` and a 12-byte nonce at `nonce` (sizes already checked).
        init(key: ChaCha20Poly1305.KeyWords, nonce: UnsafeRawPointer) {
            (k0, k1, k2, k3, k4, k5, k6, k7) = key
            (n0, n1, n2) = (loadLE32(nonce, 0), loadLE32(nonce, 4), loadLE32(nonce, 8))
        }

        /// The sixteen keystream words of block `counter` (20 rounds plus the input state).
        @inline(__always)
        func block(_ counter: UInt32) -> (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32,
                                          UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) {
            var x0: UInt32 = 0x6170_7865, x1: UInt32 = 0x3320_646e, x2: UInt32 = 0x7962_2d32, x3: UInt32 = 0x6b20_6574
            var x4 = k0, x5 = k1, x6 = k2, x7 = k3, x8 = k4, x9 = k5, x10 = k6, x11 = k7
            var x12 = counter, x13 = n0, x14 = n1, x15 = n2
            for _ in 0..<10 {
                qr(&x0, &x4, &x8, &x12); qr(&x1, &x5, &x9, &x13)
                qr(&x2, &x6, &x10, &x14); qr(&x3, &x7, &x11, &x15)
                qr(&x0, &x5, &x10, &x15); qr(&x1, &x6, &x11, &x12)
                qr(&x2, &x7, &x8, &x13); qr(&x3, &x4, &x9, &x14)
            }
            return (x0 &+ 0x6170_7865, x1 &+ 0x3320_646e, x2 &+ 0x7962_2d32, x3 &+ 0x6b20_6574,
                    x4 &+ k0, x5 &+ k1, x6 &+ k2, x7 &+ k3, x8 &+ k4, x9 &+ k5, x10 &+ k6, x11 &+ k7,
                    x12 &+ counter, x13 &+ n0, x14 &+ n1, x15 &+ n2)
        }

        /// Writes the 64-byte keystream block `counter` to `out`.
        @inline(__always)
        func keystream(counter: UInt32, into out: UnsafeMutableRawPointer) {
            let s = block(counter)
            storeLE32(out, 0, s.0); storeLE32(out, 4, s.1); storeLE32(out, 8, s.2); storeLE32(out, 12, s.3)
            storeLE32(out, 16, s.4); storeLE32(out, 20, s.5); storeLE32(out, 24, s.6); storeLE32(out, 28, s.7)
            storeLE32(out, 32, s.8); storeLE32(out, 36, s.9); storeLE32(out, 40, s.10); storeLE32(out, 44, s.11)
            storeLE32(out, 48, s.12); storeLE32(out, 52, s.13); storeLE32(out, 56, s.14); storeLE32(out, 60, s.15)
        }

        /// XORs `count` bytes at `input` with the keystream from block `counter` into `output` (the two
        /// may be the same buffer). The counter wraps after 2^32 blocks (256 GiB), as in RFC 8439.
        ///
        /// - Complexity: O(count).
        func xor(_ input: UnsafeRawPointer, into output: UnsafeMutableRawPointer, count: Int, counter: UInt32) {
            var counter = counter, offset = 0
            @inline(__always) func x(_ i: Int, _ k: UInt32) {
                output.storeBytes(
                    of: input.loadUnaligned(fromByteOffset: offset &+ 4 &* i, as: UInt32.self) ^ k.littleEndian,
                    toByteOffset: offset &+ 4 &* i, as: UInt32.self)
            }
            while count &- offset >= blockSize {
                let s = block(counter)
                x(0, s.0); x(1, s.1); x(2, s.2); x(3, s.3); x(4, s.4); x(5, s.5); x(6, s.6); x(7, s.7)
                x(8, s.8); x(9, s.9); x(10, s.10); x(11, s.11); x(12, s.12); x(13, s.13); x(14, s.14); x(15, s.15)
                counter &+= 1
                offset &+= blockSize
            }
            if offset < count {
                var tail: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
                withUnsafeMutableBytes(of: &tail) { t in
                    keystream(counter: counter, into: t.baseAddress!)
                    for i in 0..<(count &- offset) {
                        output.storeBytes(
                            of: input.load(fromByteOffset: offset &+ i, as: UInt8.self) ^ t[i],
                            toByteOffset: offset &+ i, as: UInt8.self)
                    }
                }
            }
        }
    }
}
