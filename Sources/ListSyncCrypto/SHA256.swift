/// SHA-256 (FIPS 180-4 §6.2): one-shot `hash(_:)` and the incremental `Hasher`.
public enum SHA256 {
    /// The digest length in bytes.
    public static let digestSize = 32
    /// The block length in bytes (HMAC pads its key to it).
    public static let blockSize = 64

    /// The SHA-256 digest of `data` (32 bytes).
    ///
    /// - Complexity: O(n), where n is the length of `data`.
    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] {
        var hasher = Hasher()
        hasher.update(data)
        return hasher.finalize()
    }

    /// The eight 32-bit words of the chaining state.
    typealias State = (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)

    /// The initial hash value H(0) (FIPS 180-4 §5.3.3).
    static let initialState: State = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )

    /// An incremental SHA-256: feed it bytes in any number of pieces, then take the digest once.
    ///
    /// Fixed size (112 bytes), no heap allocation; copying a hasher forks the computation (HMAC keeps
    /// its keyed inner and outer hashers this way).
    public struct Hasher: Sendable {
        var state: State = SHA256.initialState
        /// The bytes of a block not yet compressed (`buffered` of them).
        var buffer: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        var buffered = 0
        /// The total number of bytes fed in.
        var length: UInt64 = 0

        /// A hasher that has seen no bytes.
        public init() {}

        /// Feeds `data` to the hash.
        ///
        /// - Complexity: O(n), where n is the length of `data`.
        public mutating func update(_ data: some Collection<UInt8>) {
            withBytes(data) { update(bytes: $0) }
        }

        /// Feeds the bytes of `bytes` to the hash.
        ///
        /// - Complexity: O(n), where n is `bytes.count`.
        @inline(__always)
        mutating func update(bytes: UnsafeRawBufferPointer) {
            guard var p = bytes.baseAddress, bytes.count > 0 else { return }
            var n = bytes.count
            length &+= UInt64(n)
            if buffered > 0 {
                let take = min(n, SHA256.blockSize - buffered)
                withUnsafeMutableBytes(of: &buffer) { b in
                    (b.baseAddress! + buffered).copyMemory(from: p, byteCount: take)
                }
                buffered += take
                p += take
                n -= take
                guard buffered == SHA256.blockSize else { return }
                withUnsafeBytes(of: buffer) { b in SHA256.compress(&state, b.baseAddress!, blocks: 1) }
                buffered = 0
            }
            let blocks = n / SHA256.blockSize
            if blocks > 0 {
                SHA256.compress(&state, p, blocks: blocks)
                p += blocks * SHA256.blockSize
                n -= blocks * SHA256.blockSize
            }
            if n > 0 {
                withUnsafeMutableBytes(of: &buffer) { b in b.baseAddress!.copyMemory(from: p, byteCount: n) }
                buffered = n
            }
        }

        /// The digest of everything fed in (32 bytes); pads and compresses the last block(s).
        ///
        /// - Complexity: O(1) (at most two block compressions).
        public consuming func finalize() -> [UInt8] {
            [UInt8](unsafeUninitializedCapacity: SHA256.digestSize) { out, initialized in
                finish(into: UnsafeMutableRawPointer(out.baseAddress!))
                initialized = SHA256.digestSize
            }
        }

        /// Pads, compresses and writes the 32-byte digest to `out`.
        @inline(__always)
        mutating func finish(into out: UnsafeMutableRawPointer) {
            let bitLength = length &* 8
            withUnsafeMutableBytes(of: &buffer) { b in
                let p = b.baseAddress!
                p.storeBytes(of: 0x80, toByteOffset: buffered, as: UInt8.self)
                if buffered + 1 > SHA256.blockSize - 8 {
                    (p + buffered + 1).initializeMemory(as: UInt8.self, repeating: 0, count: SHA256.blockSize - buffered - 1)
                    SHA256.compress(&state, UnsafeRawPointer(p), blocks: 1)
                    p.initializeMemory(as: UInt8.self, repeating: 0, count: SHA256.blockSize - 8)
                } else {
                    (p + buffered + 1).initializeMemory(as: UInt8.self, repeating: 0, count: SHA256.blockSize - 8 - buffered - 1)
                }
                p.storeBytes(of: bitLength.bigEndian, toByteOffset: SHA256.blockSize - 8, as: UInt64.self)
                SHA256.compress(&state, UnsafeRawPointer(p), blocks: 1)
            }
            storeBE32(out, 0, state.0)
            storeBE32(out, 4, state.1)
            storeBE32(out, 8, state.2)
            storeBE32(out, 12, state.3)
            storeBE32(out, 16, state.4)
            storeBE32(out, 20, state.5)
            storeBE32(out, 24, state.6)
            storeBE32(out, 28, state.7)
        }
    }

    /// The round constants K (FIPS 180-4 §4.2.2).
    static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    @inline(__always)
    static func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x &>> n) | (x &<< (32 &- n)) }

    /// Compresses `blocks` 64-byte blocks starting at `p` into `state`.
    ///
    /// - Complexity: O(blocks).
    static func compress(_ state: inout State, _ p: UnsafeRawPointer, blocks: Int) {
        k.withUnsafeBufferPointer { kb in
            let k = kb.baseAddress!
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { wb in
                let w = wb.baseAddress!
                var (h0, h1, h2, h3, h4, h5, h6, h7) = state
                var block = p
                for _ in 0..<blocks {
                    for i in 0..<16 { w[i] = loadBE32(block, 4 &* i) }
                    for i in 16..<64 {
                        let x = w[i &- 15], y = w[i &- 2]
                        let s0 = rotr(x, 7) ^ rotr(x, 18) ^ (x &>> 3)
                        let s1 = rotr(y, 17) ^ rotr(y, 19) ^ (y &>> 10)
                        w[i] = w[i &- 16] &+ s0 &+ w[i &- 7] &+ s1
                    }
                    var a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7
                    for i in 0..<64 {
                        let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                        let ch = (e & f) ^ (~e & g)
                        let t1 = h &+ s1 &+ ch &+ k[i] &+ w[i]
                        let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                        let maj = (a & b) ^ (a & c) ^ (b & c)
                        let t2 = s0 &+ maj
                        h = g; g = f; f = e; e = d &+ t1
                        d = c; c = b; b = a; a = t1 &+ t2
                    }
                    h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d
                    h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= h
                    block += SHA256.blockSize
                }
                state = (h0, h1, h2, h3, h4, h5, h6, h7)
            }
        }
    }
}
