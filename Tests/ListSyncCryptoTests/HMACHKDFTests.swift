import Testing
import ListSyncCrypto

@Suite("HMAC-SHA256 (RFC 4231)")
struct HMACSHA256Tests {
    @Test("authenticate matches the RFC 4231 test case", arguments: hmacVectors)
    func vector(_ v: MACVector) {
        let mac = HMACSHA256.authenticate(hex(v.message), key: hex(v.key))
        #expect(mac.count == 32)
        // Test case 5 publishes the first 128 bits only.
        #expect(hexString(mac.prefix(v.mac.count / 2)) == v.mac)
    }

    @Test("isValid accepts the right MAC and rejects a flipped bit, a truncated MAC and another key",
          arguments: hmacVectors)
    func validity(_ v: MACVector) {
        let key = hex(v.key), message = hex(v.message)
        let mac = HMACSHA256.authenticate(message, key: key)
        #expect(HMACSHA256.isValid(mac, for: message, key: key))
        var flipped = mac
        flipped[31] ^= 0x80
        #expect(!HMACSHA256.isValid(flipped, for: message, key: key))
        #expect(!HMACSHA256.isValid(mac.prefix(16), for: message, key: key))
        var otherKey = key
        otherKey[0] ^= 1  // (appending a zero byte would not do: HMAC pads short keys with zeros)
        #expect(!HMACSHA256.isValid(mac, for: message, key: otherKey))
    }
}

@Suite("HKDF-SHA256 (RFC 5869)")
struct HKDFSHA256Tests {
    @Test("extract gives the published PRK, expand the published OKM", arguments: hkdfVectors)
    func vector(_ v: HKDFVector) {
        let prk = HKDFSHA256.extract(salt: hex(v.salt), ikm: hex(v.ikm))
        #expect(hexString(prk) == v.prk)
        #expect(hexString(HKDFSHA256.expand(prk: prk, info: hex(v.info), length: v.length)) == v.okm)
        #expect(hexString(HKDFSHA256.deriveKey(ikm: hex(v.ikm), salt: hex(v.salt), info: hex(v.info), length: v.length)) == v.okm)
    }

    @Test("shorter outputs are prefixes of longer ones; length 0 and the maximum 255 * 32 work")
    func lengths() {
        let prk = HKDFSHA256.extract(salt: [1, 2, 3], ikm: [4, 5, 6])
        let long = HKDFSHA256.expand(prk: prk, info: [7], length: 255 * 32)
        #expect(long.count == 8160)
        for n in [0, 1, 31, 32, 33, 64, 100] {
            #expect(HKDFSHA256.expand(prk: prk, info: [7], length: n) == Array(long.prefix(n)))
        }
    }
}
