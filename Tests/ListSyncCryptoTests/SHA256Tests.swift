import Testing
import ListSyncCrypto
import ListSyncRandom

@Suite("SHA-256 (FIPS 180-4)")
struct SHA256Tests {
    @Test("one-shot hash matches the published digest", arguments: sha256Vectors)
    func oneShot(_ v: HashVector) {
        #expect(hexString(SHA256.hash(hex(v.message))) == v.digest)
    }

    @Test("feeding the message one byte at a time gives the same digest", arguments: sha256Vectors)
    func byteAtATime(_ v: HashVector) {
        var hasher = SHA256.Hasher()
        for b in hex(v.message) { hasher.update([b]) }
        #expect(hexString(hasher.finalize()) == v.digest)
    }

    static let millionA = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"

    @Test("one million 'a' (FIPS 180-4), hashed at once")
    func millionAAtOnce() {
        #expect(hexString(SHA256.hash([UInt8](repeating: 0x61, count: 1_000_000))) == Self.millionA)
    }

    @Test("one million 'a' (FIPS 180-4), hashed in uneven chunks through Hasher")
    func millionAInChunks() {
        var hasher = SHA256.Hasher()
        let chunk = [UInt8](repeating: 0x61, count: 997)
        var left = 1_000_000
        while left > 0 {
            let n = min(left, chunk.count)
            hasher.update(chunk[..<n])
            left -= n
        }
        #expect(hexString(hasher.finalize()) == Self.millionA)
    }

    @Test("incremental equals one-shot for seeded random messages split at random points")
    func incrementalEqualsOneShot() {
        var rng = SplitMix64(seed: 256)
        for _ in 0..<200 {
            let message = rng.bytes(Int.random(in: 0...700, using: &rng))
            var hasher = SHA256.Hasher()
            var i = 0
            while i < message.count {
                let n = Int.random(in: 0...(message.count - i), using: &rng)
                hasher.update(message[i..<(i + n)])
                i += n
            }
            #expect(hasher.finalize() == SHA256.hash(message), "length \(message.count)")
        }
    }

    @Test("non-contiguous collections hash like arrays")
    func nonContiguous() {
        let bytes = (0..<300).map { UInt8($0 & 0xff) }
        #expect(SHA256.hash(bytes.lazy.map { $0 }) == SHA256.hash(bytes))
        #expect(SHA256.hash("abc".utf8) == hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }

    @Test("a copied hasher forks the computation")
    func copyForks() {
        var a = SHA256.Hasher()
        a.update(Array("ab".utf8))
        var b = a
        a.update(Array("c".utf8))
        b.update(Array("d".utf8))
        #expect(a.finalize() == SHA256.hash(Array("abc".utf8)))
        #expect(b.finalize() == SHA256.hash(Array("abd".utf8)))
    }
}
