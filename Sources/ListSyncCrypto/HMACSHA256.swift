/// HMAC-SHA256 (RFC 2104; test vectors of RFC 4231): a message authentication code under a secret key.
public enum HMACSHA256 {
    /// The MAC length in bytes.
    public static let macSize = 32

    /// The 32-byte HMAC-SHA256 of `message` under `key` (a key longer than 64 bytes is hashed first).
    ///
    /// - Complexity: O(m + k), where m and k are the lengths of `message` and `key`.
    public static func authenticate(_ message: some Collection<UInt8>, key: some Collection<UInt8>) -> [UInt8] {
        var mac = Keyed(key: key)
        mac.update(message)
        return mac.finalize()
    }

    /// Whether `mac` is the HMAC-SHA256 of `message` under `key`, compared in constant time (a MAC of
    /// another length is never valid).
    ///
    /// - Complexity: O(m + k), where m and k are the lengths of `message` and `key`.
    public static func isValid(
        _ mac: some Collection<UInt8>, for message: some Collection<UInt8>, key: some Collection<UInt8>
    ) -> Bool {
        ConstantTime.equals(authenticate(message, key: key), mac)
    }

    /// A keyed HMAC in progress: the inner hasher (key ⊕ ipad absorbed) and the outer one (key ⊕ opad).
    /// Copy one to MAC many messages under the same key without rehashing the key (HKDF-Expand does).
    struct Keyed: Sendable {
        var inner = SHA256.Hasher()
        var outer = SHA256.Hasher()

        /// Absorbs the padded key into both hashers.
        ///
        /// - Complexity: O(k), where k is the length of `key`.
        init(key: some Collection<UInt8>) {
            var block: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &block) { b in
                if key.count > SHA256.blockSize {
                    var h = SHA256.Hasher()
                    h.update(key)
                    h.finish(into: b.baseAddress!)
                } else {
                    withBytes(key) { k in if k.count > 0 { b.baseAddress!.copyMemory(from: k.baseAddress!, byteCount: k.count) } }
                }
                for i in 0..<SHA256.blockSize { b[i] ^= 0x36 }
                inner.update(bytes: UnsafeRawBufferPointer(b))
                for i in 0..<SHA256.blockSize { b[i] ^= 0x36 ^ 0x5c }
                outer.update(bytes: UnsafeRawBufferPointer(b))
            }
        }

        /// Feeds message bytes.
        ///
        /// - Complexity: O(n), where n is the length of `data`.
        mutating func update(_ data: some Collection<UInt8>) { inner.update(data) }

        /// The MAC of the message fed in.
        func finalize() -> [UInt8] {
            var inner = inner, outer = outer
            return [UInt8](unsafeUninitializedCapacity: SHA256.digestSize) { out, initialized in
                let p = UnsafeMutableRawPointer(out.baseAddress!)
                inner.finish(into: p)
                outer.update(bytes: UnsafeRawBufferPointer(start: p, count: SHA256.digestSize))
                outer.finish(into: p)
                initialized = SHA256.digestSize
            }
        }
    }
}
