/// An error of a `ListSyncCrypto` operation: a wrongly sized input, or sealed bytes that are not authentic.
public enum CryptoError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A key of the wrong length: got the first value, the primitive takes `expected` bytes.
    case invalidKeySize(Int, expected: Int)
    /// A nonce of the wrong length: got the first value, the primitive takes `expected` bytes.
    case invalidNonceSize(Int, expected: Int)
    /// A sealed box of this many bytes, shorter than the 16-byte tag it must end with.
    case truncated(Int)
    /// The tag does not match the key, nonce, additional data and ciphertext: the bytes were altered,
    /// or sealed under another key or nonce. Nothing was decrypted.
    case authenticationFailed

    /// A sentence saying what went wrong and what the caller should check.
    public var description: String {
        switch self {
        case let .invalidKeySize(n, expected):
            return "invalid key size: \(n) bytes, expected \(expected)"
        case let .invalidNonceSize(n, expected):
            return "invalid nonce size: \(n) bytes, expected \(expected)"
        case let .truncated(n):
            return "sealed box truncated: \(n) bytes, shorter than the \(ChaCha20Poly1305.tagSize)-byte tag"
        case .authenticationFailed:
            return "authentication failed: the sealed bytes, additional data, nonce or key do not match"
        }
    }
}
