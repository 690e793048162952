// ListSyncCrypto: the primitives the sync daemon's handshake and frames need, in pure Swift.
//
// No I/O, no third-party code, no platform crypto library: every primitive works on raw buffers
// (`withUnsafeBytes` inside, fixed-size state, no per-block allocation) and is tested against the
// published vectors of its specification (Tests/ListSyncCryptoTests).
//
// | file                       | what                                   | follows                              |
// |----------------------------|----------------------------------------|--------------------------------------|
// | SHA256.swift               | `SHA256` one-shot and `SHA256.Hasher`  | FIPS 180-4 §6.2                      |
// | HMACSHA256.swift           | `HMACSHA256`                           | RFC 2104 (vectors: RFC 4231)         |
// | HKDFSHA256.swift           | `HKDFSHA256` extract / expand          | RFC 5869                             |
// | ChaCha20.swift             | the raw ChaCha20 stream cipher         | RFC 8439 §2.1–§2.4                   |
// | Poly1305.swift             | the raw Poly1305 one-time authenticator| RFC 8439 §2.5 (26-bit limbs)         |
// | ChaCha20Poly1305.swift     | the AEAD the daemon's frames use       | RFC 8439 §2.6, §2.8                  |
// | ConstantTime.swift         | `ConstantTime.equals` for tags and MACs| —                                    |
// | SecureRandom.swift         | `SecureRandom.bytes` (keys, nonces)    | `SystemRandomNumberGenerator` only   |
// | CryptoError.swift          | the one typed error of this module     | —                                    |
//
// How the daemon uses them (Docs/Transport.md, "Handshake" and "Frames"): the handshake hashes its
// transcript with SHA-256, proves knowledge of the pre-shared key with HMAC-SHA256 under role labels,
// and derives one key per direction with HKDF-SHA256; every frame after it is sealed with
// ChaCha20-Poly1305 under `ChaCha20Poly1305.nonce(counter:)` (4 zero bytes and a big-endian frame
// counter), so a key never sees a nonce twice as long as the counter never repeats.
//
// `ChaCha20` and `Poly1305` are exposed for the tests and for tools; they are unauthenticated / one-time
// building blocks: protocol code should use `ChaCha20Poly1305`.

/// Calls `body` with the contiguous bytes of `data`, copying them into an array only when the
/// collection has no contiguous storage.
///
/// - Complexity: O(1) for arrays, slices, `Data` and buffers; O(n) otherwise.
@inline(__always)
func withBytes<C: Collection<UInt8>, R>(_ data: C, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    if let r = data.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) { return r }
    return Array(data).withUnsafeBytes(body)
}

/// Reads a little-endian `UInt32` at `offset` (any alignment).
@inline(__always)
func loadLE32(_ p: UnsafeRawPointer, _ offset: Int) -> UInt32 {
    UInt32(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
}

/// Reads a big-endian `UInt32` at `offset` (any alignment).
@inline(__always)
func loadBE32(_ p: UnsafeRawPointer, _ offset: Int) -> UInt32 {
    UInt32(bigEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
}

/// Writes `v` little-endian at `offset` (any alignment).
@inline(__always)
func storeLE32(_ p: UnsafeMutableRawPointer, _ offset: Int, _ v: UInt32) {
    p.storeBytes(of: v.littleEndian, toByteOffset: offset, as: UInt32.self)
}

/// Writes `v` big-endian at `offset` (any alignment).
@inline(__always)
func storeBE32(_ p: UnsafeMutableRawPointer, _ offset: Int, _ v: UInt32) {
    p.storeBytes(of: v.bigEndian, toByteOffset: offset, as: UInt32.self)
}
