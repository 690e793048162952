import Testing
import ListSyncCrypto
import ListSyncRandom

@Suite("ChaCha20 (RFC 8439 §2.1-§2.4)")
struct ChaCha20Tests {
    @Test("quarter round: §2.1.1 and the §2.2.1 diagonal QUARTERROUND(2, 7, 8, 13)")
    func quarterRound() {
        let a = ChaCha20.quarterRound(0x1111_1111, 0x0102_0304, 0x9b8d_6f43, 0x0123_4567)
        #expect([a.0, a.1, a.2, a.3] == [0xea2a_92f4, 0xcb1c_f8ce, 0x4581_472e, 0x5881_c4bb])
        let b = ChaCha20.quarterRound(0x5164_61b1, 0x2a5f_714c, 0x5337_2767, 0x3d63_1689)
        #expect([b.0, b.1, b.2, b.3] == [0xbdb8_86dc, 0xcfac_afd2, 0xe46b_ea80, 0xccc0_7c79])
    }

    @Test("block function gives the published 64-byte block", arguments: chachaBlockVectors)
    func block(_ v: ChaChaBlockVector) throws {
        let block = try ChaCha20.block(key: hex(v.key), counter: v.counter, nonce: hex(v.nonce))
        #expect(hexString(block) == v.block)
    }

    @Test("encryption gives the published ciphertext, and decrypts back", arguments: chachaEncryptionVectors)
    func encryption(_ v: ChaChaEncryptionVector) throws {
        let ct = try ChaCha20.encrypt(hex(v.plaintext), key: hex(v.key), counter: v.counter, nonce: hex(v.nonce))
        #expect(hexString(ct) == v.ciphertext)
        #expect(try ChaCha20.encrypt(ct, key: hex(v.key), counter: v.counter, nonce: hex(v.nonce)) == hex(v.plaintext))
    }

    @Test("Poly1305 key generation: the first 32 bytes of block 0", arguments: poly1305KeyGenVectors)
    func keyGeneration(_ v: KeyGenVector) throws {
        let block = try ChaCha20.block(key: hex(v.key), counter: 0, nonce: hex(v.nonce))
        #expect(hexString(block.prefix(32)) == v.oneTimeKey)
    }

    @Test("encryption equals the concatenated blocks for every length 0...200")
    func encryptionIsTheKeystream() throws {
        let key = (0..<32).map { UInt8($0) }, nonce = hex("000000000000004a00000000")
        var stream: [UInt8] = []
        for c in UInt32(7)..<11 { stream += try ChaCha20.block(key: key, counter: c, nonce: nonce) }
        for n in 0...200 {
            let zeros = [UInt8](repeating: 0, count: n)
            #expect(try ChaCha20.encrypt(zeros, key: key, counter: 7, nonce: nonce) == Array(stream.prefix(n)), "length \(n)")
        }
    }

    @Test("wrong key and nonce sizes are typed errors")
    func sizes() {
        #expect(throws: CryptoError.invalidKeySize(31, expected: 32)) {
            try ChaCha20.block(key: [UInt8](repeating: 0, count: 31), counter: 0, nonce: [UInt8](repeating: 0, count: 12))
        }
        #expect(throws: CryptoError.invalidNonceSize(8, expected: 12)) {
            try ChaCha20.encrypt([1], key: [UInt8](repeating: 0, count: 32), counter: 0, nonce: [UInt8](repeating: 0, count: 8))
        }
    }
}

@Suite("Poly1305 (RFC 8439 §2.5, A.3)")
struct Poly1305Tests {
    @Test("authenticate gives the published tag", arguments: poly1305Vectors)
    func vector(_ v: MACVector) throws {
        #expect(hexString(try Poly1305.authenticate(message: hex(v.message), key: hex(v.key))) == v.mac)
    }

    @Test("feeding the message in random pieces gives the same tag", arguments: poly1305Vectors)
    func incremental(_ v: MACVector) throws {
        var rng = SplitMix64(seed: UInt64(v.message.count))
        let message = hex(v.message)
        for _ in 0..<10 {
            var mac = try Poly1305(key: hex(v.key))
            var i = 0
            while i < message.count {
                let n = Int.random(in: 0...min(40, message.count - i), using: &rng)
                mac.update(message[i..<(i + n)])
                i += n
            }
            #expect(hexString(mac.finalize()) == v.mac)
        }
    }

    @Test("a key that is not 32 bytes is a typed error")
    func keySize() {
        #expect(throws: CryptoError.invalidKeySize(16, expected: 32)) {
            try Poly1305.authenticate(message: [1, 2, 3], key: [UInt8](repeating: 1, count: 16))
        }
    }
}

@Suite("ChaCha20-Poly1305 AEAD (RFC 8439 §2.8, A.5)")
struct ChaCha20Poly1305Tests {
    static let v = aeadVectors[0]  // §2.8.2

    @Test("seal gives the published ciphertext and tag; open gives the plaintext back", arguments: aeadVectors)
    func vector(_ v: AEADVector) throws {
        let aead = try ChaCha20Poly1305(key: hex(v.key))
        let sealed = try aead.seal(hex(v.plaintext), nonce: hex(v.nonce), authenticating: hex(v.aad))
        #expect(hexString(sealed) == v.ciphertext + v.tag)
        #expect(try aead.open(hex(v.ciphertext + v.tag), nonce: hex(v.nonce), authenticating: hex(v.aad)) == hex(v.plaintext))
    }

    @Test("empty plaintext and empty aad (tags computed with pyca cryptography)")
    func empty() throws {
        let aead = try ChaCha20Poly1305(key: hex(Self.v.key)), nonce = hex(Self.v.nonce)
        let both = try aead.seal([UInt8](), nonce: nonce, authenticating: [UInt8]())
        #expect(hexString(both) == "a0784d7a4716f3feb4f64e7f4b39bf04")
        #expect(try aead.open(both, nonce: nonce, authenticating: [UInt8]()) == [])
        let aadOnly = try aead.seal([UInt8](), nonce: nonce, authenticating: hex(Self.v.aad))
        #expect(hexString(aadOnly) == "e622e5647a38d967a7ecbcb46c7f675c")
        #expect(try aead.open(aadOnly, nonce: nonce, authenticating: hex(Self.v.aad)) == [])
        let oneByte = try aead.seal(Array("x".utf8), nonce: nonce, authenticating: [UInt8]())
        #expect(hexString(oneByte) == "e7b351f5a6ec290e9c0c9b51b2b87664f7")
        #expect(throws: CryptoError.authenticationFailed) { try aead.open(both, nonce: nonce, authenticating: hex(Self.v.aad)) }
    }

    @Test("every flipped bit of ciphertext or tag fails authentication")
    func flippedSealedBits() throws {
        let aead = try ChaCha20Poly1305(key: hex(Self.v.key))
        let sealed = hex(Self.v.ciphertext + Self.v.tag), nonce = hex(Self.v.nonce), aad = hex(Self.v.aad)
        for i in sealed.indices {
            for bit in 0..<8 {
                var bad = sealed
                bad[i] ^= 1 << bit
                #expect(throws: CryptoError.authenticationFailed, "byte \(i) bit \(bit)") {
                    try aead.open(bad, nonce: nonce, authenticating: aad)
                }
            }
        }
    }

    @Test("every flipped bit of aad or nonce, an extra or a missing aad byte, and another key fail authentication")
    func flippedContextBits() throws {
        let aead = try ChaCha20Poly1305(key: hex(Self.v.key))
        let sealed = hex(Self.v.ciphertext + Self.v.tag), nonce = hex(Self.v.nonce), aad = hex(Self.v.aad)
        for i in 0..<(aad.count * 8) {
            var bad = aad
            bad[i / 8] ^= 1 << (i % 8)
            #expect(throws: CryptoError.authenticationFailed) { try aead.open(sealed, nonce: nonce, authenticating: bad) }
        }
        for i in 0..<(nonce.count * 8) {
            var bad = nonce
            bad[i / 8] ^= 1 << (i % 8)
            #expect(throws: CryptoError.authenticationFailed) { try aead.open(sealed, nonce: bad, authenticating: aad) }
        }
        #expect(throws: CryptoError.authenticationFailed) { try aead.open(sealed, nonce: nonce, authenticating: aad + [0]) }
        #expect(throws: CryptoError.authenticationFailed) { try aead.open(sealed, nonce: nonce, authenticating: aad.dropLast()) }
        var otherKey = hex(Self.v.key)
        otherKey[0] ^= 1
        #expect(throws: CryptoError.authenticationFailed) {
            try ChaCha20Poly1305(key: otherKey).open(sealed, nonce: nonce, authenticating: aad)
        }
    }

    @Test("a sealed box shorter than the tag is .truncated; a shortened one of valid length fails authentication")
    func truncated() throws {
        let aead = try ChaCha20Poly1305(key: hex(Self.v.key))
        let sealed = hex(Self.v.ciphertext + Self.v.tag), nonce = hex(Self.v.nonce), aad = hex(Self.v.aad)
        for n in 0..<16 {
            #expect(throws: CryptoError.truncated(n)) { try aead.open(sealed.prefix(n), nonce: nonce, authenticating: aad) }
        }
        for cut in [1, 15, 16, 17, 64, sealed.count - 16] {
            #expect(throws: CryptoError.authenticationFailed, "\(cut) bytes cut from the front") {
                try aead.open(sealed.dropFirst(cut), nonce: nonce, authenticating: aad)
            }
            #expect(throws: CryptoError.authenticationFailed, "\(cut) bytes cut before the tag") {
                try aead.open(Array(sealed.prefix(sealed.count - 16 - min(cut, sealed.count - 16))) + sealed.suffix(16),
                              nonce: nonce, authenticating: aad)
            }
        }
    }

    @Test("wrong key and nonce sizes are typed errors")
    func sizes() throws {
        for n in [0, 16, 31, 33] {
            #expect(throws: CryptoError.invalidKeySize(n, expected: 32)) { try ChaCha20Poly1305(key: [UInt8](repeating: 7, count: n)) }
        }
        let aead = try ChaCha20Poly1305(key: [UInt8](repeating: 7, count: 32))
        for n in [0, 8, 11, 13, 24] {
            let nonce = [UInt8](repeating: 0, count: n)
            #expect(throws: CryptoError.invalidNonceSize(n, expected: 12)) { try aead.seal([1, 2], nonce: nonce, authenticating: [UInt8]()) }
            #expect(throws: CryptoError.invalidNonceSize(n, expected: 12)) {
                try aead.open([UInt8](repeating: 0, count: 20), nonce: nonce, authenticating: [UInt8]())
            }
        }
    }

    @Test("seal/open round trips for lengths 0...300 with seeded random data, and seal equals ChaCha20 + Poly1305 composed by hand")
    func roundTrips() throws {
        var rng = SplitMix64(seed: 8439)
        for length in 0...300 {
            let key = rng.bytes(32), nonce = rng.bytes(12), aad = rng.bytes(Int.random(in: 0...40, using: &rng))
            let plaintext = rng.bytes(length)
            let aead = try ChaCha20Poly1305(key: key)
            let sealed = try aead.seal(plaintext, nonce: nonce, authenticating: aad)
            #expect(sealed.count == length + 16)
            #expect(try aead.open(sealed, nonce: nonce, authenticating: aad) == plaintext, "length \(length)")

            // The construction of §2.8, built from the raw pieces.
            let ciphertext = try ChaCha20.encrypt(plaintext, key: key, counter: 1, nonce: nonce)
            let otk = try ChaCha20.block(key: key, counter: 0, nonce: nonce).prefix(32)
            func pad16(_ n: Int) -> [UInt8] { [UInt8](repeating: 0, count: (16 - n % 16) % 16) }
            func le64(_ n: Int) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: UInt64(n) >> (8 * $0)) } }
            let macData = aad + pad16(aad.count) + ciphertext + pad16(length) + le64(aad.count) + le64(length)
            #expect(sealed == ciphertext + (try Poly1305.authenticate(message: macData, key: otk)), "length \(length)")
        }
    }

    @Test("seal(inPlace:counter:) gives A.5's ciphertext and tag (its nonce is of the counter form), and what seal gives for lengths 0...300")
    func inPlace() throws {
        func sealInPlace(_ aead: ChaCha20Poly1305, _ plaintext: [UInt8], counter: UInt64, aad: [UInt8]) -> [UInt8] {
            var buffer = plaintext + [UInt8](repeating: 0, count: ChaCha20Poly1305.tagSize)
            buffer.withUnsafeMutableBytes { b in aad.withUnsafeBytes { aead.seal(inPlace: b, counter: counter, authenticating: $0) } }
            return buffer
        }
        let v = aeadVectors[1]
        #expect(v.nonce == "000000000102030405060708")
        let sealed = sealInPlace(try ChaCha20Poly1305(key: hex(v.key)), hex(v.plaintext), counter: 0x0102_0304_0506_0708, aad: hex(v.aad))
        #expect(hexString(sealed) == v.ciphertext + v.tag)

        var rng = SplitMix64(seed: 2808)
        for length in 0...300 {
            let aead = try ChaCha20Poly1305(key: rng.bytes(32)), counter = rng.next()
            let aad = rng.bytes(Int.random(in: 0...40, using: &rng)), plaintext = rng.bytes(length)
            #expect(sealInPlace(aead, plaintext, counter: counter, aad: aad)
                    == (try aead.seal(plaintext, nonce: ChaCha20Poly1305.nonce(counter: counter), authenticating: aad)), "length \(length)")
        }
    }

    @Test("slices with a non-zero start index and non-contiguous collections are read correctly")
    func slices() throws {
        let aead = try ChaCha20Poly1305(key: hex(Self.v.key))
        let framed = [0xff, 0xfe] + hex(Self.v.ciphertext + Self.v.tag) + [0xfd]
        let sealed = framed[2..<(framed.count - 1)]
        #expect(try aead.open(sealed, nonce: hex(Self.v.nonce)[...], authenticating: hex(Self.v.aad).lazy.map { $0 })
                == hex(Self.v.plaintext))
    }

    @Test("nonce(counter:) is 4 zero bytes and the counter big-endian")
    func nonce() {
        #expect(ChaCha20Poly1305.nonce(counter: 0) == [UInt8](repeating: 0, count: 12))
        #expect(ChaCha20Poly1305.nonce(counter: 0x0102_0304_0506_0708) == [0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(ChaCha20Poly1305.nonce(counter: .max) == [0, 0, 0, 0] + [UInt8](repeating: 0xff, count: 8))
    }

    @Test("errors describe themselves")
    func descriptions() {
        #expect(CryptoError.truncated(3).description.contains("3 bytes"))
        #expect(CryptoError.invalidKeySize(5, expected: 32).description.contains("expected 32"))
        #expect(CryptoError.authenticationFailed.description.hasPrefix("authentication failed"))
    }
}

@Suite("ConstantTime and SecureRandom")
struct ConstantTimeTests {
    @Test("equals: equal, different in any one position, different lengths, empty")
    func equals() {
        let a = (0..<40).map { UInt8($0) }
        #expect(ConstantTime.equals(a, a))
        #expect(ConstantTime.equals(a, a[...]))
        #expect(ConstantTime.equals([UInt8](), [UInt8]()))
        for i in a.indices {
            var b = a
            b[i] ^= 0x01
            #expect(!ConstantTime.equals(a, b), "differs at \(i)")
        }
        #expect(!ConstantTime.equals(a, a.dropLast()))
        #expect(!ConstantTime.equals(a, a + [0]))
        #expect(!ConstantTime.equals([UInt8](), [0]))
    }

    @Test("SecureRandom.bytes gives the requested count, and two draws differ")
    func random() {
        for n in [0, 1, 7, 8, 9, 32, 100] { #expect(SecureRandom.bytes(n).count == n) }
        #expect(SecureRandom.bytes(32) != SecureRandom.bytes(32))
    }
}
