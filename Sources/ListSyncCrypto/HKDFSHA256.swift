/// HKDF with HMAC-SHA256 (RFC 5869): derives keys from input keying material.
public enum HKDFSHA256 {
    /// The largest `length` `expand` can produce: 255 blocks of 32 bytes.
    public static let maxOutputLength = 255 * SHA256.digestSize

    /// HKDF-Extract: the 32-byte pseudorandom key HMAC(salt, ikm); an empty salt acts as 32 zero bytes.
    ///
    /// - Complexity: O(s + i), where s and i are the lengths of `salt` and `ikm`.
    public static func extract(salt: some Collection<UInt8>, ikm: some Collection<UInt8>) -> [UInt8] {
        HMACSHA256.authenticate(ikm, key: salt)
    }

    /// HKDF-Expand: `length` bytes of output keying material from `prk` bound to `info`.
    ///
    /// - Precondition: `0 <= length <= 255 * 32`.
    /// - Complexity: O(length + info.count · ⌈length / 32⌉).
    public static func expand(prk: some Collection<UInt8>, info: some Collection<UInt8>, length: Int) -> [UInt8] {
        precondition(length >= 0 && length <= maxOutputLength, "HKDF-SHA256 output length \(length) out of 0...\(maxOutputLength)")
        let keyed = HMACSHA256.Keyed(key: prk)
        let info = Array(info)
        var okm: [UInt8] = []
        okm.reserveCapacity(length + SHA256.digestSize)
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while okm.count < length {
            var mac = keyed
            mac.update(previous)
            mac.update(info)
            mac.update(CollectionOfOne(counter))
            previous = mac.finalize()
            okm += previous
            counter &+= 1
        }
        okm.removeLast(okm.count - length)
        return okm
    }

    /// Extract then expand: `length` bytes derived from `ikm` with `salt` and `info`.
    ///
    /// - Precondition: `0 <= length <= 255 * 32`.
    /// - Complexity: O(ikm.count + salt.count + length + info.count · ⌈length / 32⌉).
    public static func deriveKey(
        ikm: some Collection<UInt8>, salt: some Collection<UInt8>, info: some Collection<UInt8>, length: Int
    ) -> [UInt8] {
        expand(prk: extract(salt: salt, ikm: ikm), info: info, length: length)
    }
}
