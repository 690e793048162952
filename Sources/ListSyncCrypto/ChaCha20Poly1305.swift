/// The ChaCha20-Poly1305 AEAD (RFC 8439 §2.8): seals every frame of the sync daemon after the handshake.
///
/// A value holds one 256-bit key as eight words (no heap storage) and is cheap to copy. Each
/// (key, nonce) pair must seal one message only: the daemon's frames use `nonce(counter:)` with a
/// per-direction frame counter.
public struct ChaCha20Poly1305: Sendable {
    /// The key length in bytes.
    public static let keySize = 32
    /// The nonce length in bytes.
    public static let nonceSize = 12
    /// The tag length in bytes (the sealed box is the ciphertext followed by it).
    public static let tagSize = 16

    /// The longest plaintext one nonce can seal: 2^32 - 1 blocks of 64 bytes (RFC 8439 §2.8).
    public static let maxPlaintextSize: UInt64 = 0xffff_ffff * 64

    typealias KeyWords = (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)
    let key: KeyWords

    /// An AEAD under `key` (32 bytes, e.g. from `HKDFSHA256` or `SecureRandom.bytes(32)`).
    ///
    /// - Throws: `CryptoError.invalidKeySize` unless `key` has 32 bytes.
    public init(key: some Collection<UInt8>) throws(CryptoError) {
        guard key.count == Self.keySize else { throw .invalidKeySize(key.count, expected: Self.keySize) }
        self.key = withBytes(key) { b in
            let p = b.baseAddress!
            return (loadLE32(p, 0), loadLE32(p, 4), loadLE32(p, 8), loadLE32(p, 12),
                    loadLE32(p, 16), loadLE32(p, 20), loadLE32(p, 24), loadLE32(p, 28))
        }
    }

    /// The 12-byte nonce of frame `counter`: 4 zero bytes, then the counter big-endian (Docs/Transport.md, "Frames").
    public static func nonce(counter: UInt64) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: nonceSize) { out, initialized in
            let p = UnsafeMutableRawPointer(out.baseAddress!)
            p.storeBytes(of: UInt32(0), as: UInt32.self)
            p.storeBytes(of: counter.bigEndian, toByteOffset: 4, as: UInt64.self)
            initialized = nonceSize
        }
    }

    /// Encrypts `plaintext` and authenticates it with `aad`: the ciphertext followed by the 16-byte tag.
    ///
    /// - Precondition: `plaintext` is at most `maxPlaintextSize` bytes (the 32-bit block counter).
    /// - Throws: `CryptoError.invalidNonceSize` unless `nonce` has 12 bytes.
    /// - Complexity: O(p + a), where p and a are the lengths of `plaintext` and `aad`.
    public func seal(
        _ plaintext: some Collection<UInt8>, nonce: some Collection<UInt8>, authenticating aad: some Collection<UInt8>
    ) throws(CryptoError) -> [UInt8] {
        guard nonce.count == Self.nonceSize else { throw .invalidNonceSize(nonce.count, expected: Self.nonceSize) }
        return withBytes(nonce) { n in
            withBytes(aad) { a in
                withBytes(plaintext) { pt in
                    [UInt8](unsafeUninitializedCapacity: pt.count + Self.tagSize) { out, initialized in
                        seal(pt.baseAddress, count: pt.count, into: UnsafeMutableRawPointer(out.baseAddress!), nonce: n.baseAddress!, aad: a)
                        initialized = pt.count + Self.tagSize
                    }
                }
            }
        }
    }

    /// Seals in place under the nonce ``nonce(counter:)`` makes: `buffer` holds the plaintext
    /// followed by ``tagSize`` bytes of room; the plaintext becomes the ciphertext and the room the
    /// tag, as ``seal(_:nonce:authenticating:)`` would return them. For a frame sealed where it is
    /// queued, with no array of its own (a daemon seals one per subscriber per batch).
    ///
    /// - Precondition: `buffer` has at least ``tagSize`` bytes, and the plaintext at most
    ///   ``maxPlaintextSize``.
    /// - Complexity: O(p + a), where p and a are the lengths of the plaintext and `aad`.
    public func seal(inPlace buffer: UnsafeMutableRawBufferPointer, counter: UInt64, authenticating aad: UnsafeRawBufferPointer) {
        precondition(buffer.count >= Self.tagSize, "no room for the tag")
        // The nonce as three words: 4 zero bytes, then the counter big-endian (``nonce(counter:)``).
        let nonce: (UInt32, UInt32, UInt32) = (0, UInt32(truncatingIfNeeded: counter >> 32).bigEndian,
                                               UInt32(truncatingIfNeeded: counter).bigEndian)
        withUnsafeBytes(of: nonce) { n in
            seal(UnsafeRawPointer(buffer.baseAddress), count: buffer.count - Self.tagSize, into: buffer.baseAddress!,
                 nonce: n.baseAddress!, aad: aad)
        }
    }

    /// Encrypts the `count` bytes at `input` into `output` (the same memory or none overlapping)
    /// and writes the tag after them: the one sealing both forms share.
    @inline(__always)
    private func seal(_ input: UnsafeRawPointer?, count: Int, into output: UnsafeMutableRawPointer, nonce: UnsafeRawPointer,
                      aad: UnsafeRawBufferPointer) {
        precondition(UInt64(count) <= Self.maxPlaintextSize, "ChaCha20-Poly1305 plaintext of \(count) bytes is over 256 GiB")
        let core = ChaCha20.Core(key: key, nonce: nonce)
        if count > 0, let input { core.xor(input, into: output, count: count, counter: 1) }
        var mac = Self.poly1305(core)
        Self.authenticate(&mac, aad: aad, ciphertext: UnsafeRawBufferPointer(start: output, count: count))
        mac.tag(into: output + count)
    }

    /// Checks the tag of `sealed` (ciphertext ‖ tag) against `nonce` and `aad` in constant time, then
    /// decrypts: the plaintext. Unauthenticated bytes are never decrypted nor returned.
    ///
    /// - Throws: `CryptoError.invalidNonceSize` unless `nonce` has 12 bytes; `.truncated` when `sealed`
    ///   is shorter than the tag; `.authenticationFailed` when the tag does not match.
    /// - Complexity: O(s + a), where s and a are the lengths of `sealed` and `aad`.
    public func open(
        _ sealed: some Collection<UInt8>, nonce: some Collection<UInt8>, authenticating aad: some Collection<UInt8>
    ) throws(CryptoError) -> [UInt8] {
        guard nonce.count == Self.nonceSize else { throw .invalidNonceSize(nonce.count, expected: Self.nonceSize) }
        guard sealed.count >= Self.tagSize else { throw .truncated(sealed.count) }
        let plaintext: [UInt8]? = withBytes(nonce) { n in
            withBytes(aad) { a in
                withBytes(sealed) { s in
                    let count = s.count - Self.tagSize
                    let core = ChaCha20.Core(key: key, nonce: n.baseAddress!)
                    var mac = Self.poly1305(core)
                    Self.authenticate(&mac, aad: a, ciphertext: UnsafeRawBufferPointer(start: s.baseAddress!, count: count))
                    var expected: (UInt64, UInt64) = (0, 0)
                    let ok = withUnsafeMutableBytes(of: &expected) { e in
                        mac.tag(into: e.baseAddress!)
                        return ConstantTime.equals(UnsafeRawBufferPointer(e), UnsafeRawBufferPointer(rebasing: s[count...]))
                    }
                    guard ok else { return nil }
                    return [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
                        if count > 0 { core.xor(s.baseAddress!, into: UnsafeMutableRawPointer(out.baseAddress!), count: count, counter: 1) }
                        initialized = count
                    }
                }
            }
        }
        guard let plaintext else { throw .authenticationFailed }
        return plaintext
    }

    /// The Poly1305 authenticator keyed with the first 32 bytes of keystream block 0 (RFC 8439 §2.6).
    @inline(__always)
    static func poly1305(_ core: ChaCha20.Core) -> Poly1305 {
        var block: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &block) { b in
            core.keystream(counter: 0, into: b.baseAddress!)
            return Poly1305(keyAt: UnsafeRawPointer(b.baseAddress!))
        }
    }

    /// Feeds the AEAD's MAC input: aad ‖ pad16 ‖ ciphertext ‖ pad16 ‖ len(aad) ‖ len(ciphertext), the
    /// lengths as 64-bit little-endian (RFC 8439 §2.8).
    @inline(__always)
    static func authenticate(_ mac: inout Poly1305, aad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer) {
        mac.absorbPadded(aad.baseAddress, count: aad.count)
        mac.absorbPadded(ciphertext.baseAddress, count: ciphertext.count)
        let lengths: (UInt64, UInt64) = (UInt64(aad.count).littleEndian, UInt64(ciphertext.count).littleEndian)
        withUnsafeBytes(of: lengths) { mac.blocks($0.baseAddress!, count: 16, hibit: 1 << 24) }
    }
}

