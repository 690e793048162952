import Testing
import ListSyncRandom

// Vector types, hex decoding and a seeded generator for the ListSyncCrypto tests.

/// The bytes of a hex string ("" is empty); traps on a malformed literal (a bug in the test).
func hex(_ s: String) -> [UInt8] {
    let digits = Array(s.utf8)
    precondition(digits.count % 2 == 0, "odd hex literal")
    func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: preconditionFailure("bad hex digit \(c)")
        }
    }
    return stride(from: 0, to: digits.count, by: 2).map { nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
}

/// `bytes` as lowercase hex (for readable failures).
func hexString(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
    return String(decoding: out, as: UTF8.self)
}

struct HashVector: Sendable, CustomTestStringConvertible {
    var name: String, message: String, digest: String
    var testDescription: String { name }
}

struct MACVector: Sendable, CustomTestStringConvertible {
    var name: String, key: String, message: String, mac: String
    var testDescription: String { name }
}

struct HKDFVector: Sendable, CustomTestStringConvertible {
    var name: String, ikm: String, salt: String, info: String, length: Int, prk: String, okm: String
    var testDescription: String { name }
}

struct ChaChaBlockVector: Sendable, CustomTestStringConvertible {
    var name: String, key: String, counter: UInt32, nonce: String, block: String
    var testDescription: String { name }
}

struct ChaChaEncryptionVector: Sendable, CustomTestStringConvertible {
    var name: String, key: String, counter: UInt32, nonce: String, plaintext: String, ciphertext: String
    var testDescription: String { name }
}

struct KeyGenVector: Sendable, CustomTestStringConvertible {
    var name: String, key: String, nonce: String, oneTimeKey: String
    var testDescription: String { name }
}

struct AEADVector: Sendable, CustomTestStringConvertible {
    var name: String, key: String, nonce: String, aad: String, plaintext: String, ciphertext: String, tag: String
    var testDescription: String { name }
}
