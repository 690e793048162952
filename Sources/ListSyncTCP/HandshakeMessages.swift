import ListSyncTransport

/// The frames of the handshake and of an established connection (Docs/Transport.md).
///
/// Before the handshake ends a frame body is `u8 type | payload` in the clear; after it, the same
/// plaintext is sealed with ChaCha20-Poly1305.
enum MessageType: UInt8, Sendable {
    // In the clear, during the handshake.
    case hello = 1, challenge = 2, proof = 3, error = 4
    // Sealed, once the keys are derived.
    case welcome = 16, data = 17, ping = 18, pong = 19, bye = 20
}

/// The handshake's fixed parts.
enum Handshake {
    /// The protocol's magic: "LSY1".
    static let magic: [UInt8] = Array("LSY1".utf8)
    /// Protocol versions this build speaks.
    static let versions: ClosedRange<UInt16> = 1...1
    /// Sizes of identities, nonces and MACs.
    static let idSize = 16, nonceSize = 32, macSize = 32
    /// HELLO: magic | min u16 | max u16 | clientID | nonceC.
    static let helloSize = 4 + 2 + 2 + idSize + nonceSize
    /// CHALLENGE: magic | version u16 | serverID | nonceS | macS.
    static let challengeSize = 4 + 2 + idSize + nonceSize + macSize
    /// Role labels of the two MACs: they differ, so a MAC cannot be reflected to its maker.
    static let serverLabel: [UInt8] = Array("listsync server".utf8)
    static let clientLabel: [UInt8] = Array("listsync client".utf8)
    /// HKDF info prefix.
    static let keyInfo: [UInt8] = Array("listsync v1".utf8)

    /// A client's HELLO body (type byte included); a device adds its encoded claims
    /// (`u16 length | claims`, Docs/Security.md).
    static func hello(versions: ClosedRange<UInt16>, clientID: [UInt8], nonce: [UInt8], claims: [UInt8]? = nil) -> [UInt8] {
        var b: [UInt8] = [MessageType.hello.rawValue]
        b += magic
        b += be16(versions.lowerBound) + be16(versions.upperBound)
        b += clientID + nonce
        if let claims {
            precondition(claims.count <= DeviceClaims.maxEncodedSize, "claims of \(claims.count) bytes")
            b += be16(UInt16(claims.count)) + claims
        }
        return b
    }

    /// A parsed HELLO.
    struct Hello: Equatable {
        var versions: ClosedRange<UInt16>
        var clientID: [UInt8]
        var nonce: [UInt8]
        /// A device's encoded claims (not yet decoded); nil for a holder of the daemon's key.
        var claims: [UInt8]?
    }

    /// Parses a HELLO body; `nil` for anything else (bad type, magic or size).
    static func parseHello(_ body: [UInt8]) -> Hello? {
        guard body.count >= 1 + helloSize, body[0] == MessageType.hello.rawValue, Array(body[1...4]) == magic else { return nil }
        let lo = u16(body, 5), hi = u16(body, 7)
        guard lo <= hi else { return nil }
        var claims: [UInt8]?
        if body.count > 1 + helloSize {
            let at = 1 + helloSize
            guard body.count >= at + 2, body.count == at + 2 + Int(u16(body, at)) else { return nil }
            claims = Array(body[(at + 2)...])
        }
        return Hello(versions: lo...hi, clientID: Array(body[9..<25]), nonce: Array(body[25..<57]), claims: claims)
    }

    /// A server's CHALLENGE body without its MAC (what the transcript hash covers).
    static func challengeHead(version: UInt16, serverID: [UInt8], nonce: [UInt8]) -> [UInt8] {
        var b: [UInt8] = [MessageType.challenge.rawValue]
        b += magic
        b += be16(version)
        b += serverID + nonce
        return b
    }

    /// A parsed CHALLENGE.
    struct Challenge: Equatable {
        var version: UInt16
        var serverID: [UInt8]
        var nonce: [UInt8]
        var mac: [UInt8]
        /// The body without the MAC.
        var head: [UInt8]
    }

    /// Parses a CHALLENGE body; `nil` for anything else.
    static func parseChallenge(_ body: [UInt8]) -> Challenge? {
        guard body.count == 1 + challengeSize, body[0] == MessageType.challenge.rawValue, Array(body[1...4]) == magic else { return nil }
        return Challenge(version: u16(body, 5), serverID: Array(body[7..<23]), nonce: Array(body[23..<55]),
                         mac: Array(body[55..<87]), head: Array(body[0..<55]))
    }

    /// An ERROR body: code and a short text.
    static func error(_ code: HandshakeErrorCode, _ text: String) -> [UInt8] {
        [MessageType.error.rawValue, code.rawValue] + Array(text.utf8.prefix(200))
    }

    static func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xff)] }
    static func u16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) << 8 | UInt16(b[i + 1]) }
}

/// The code of a handshake ERROR frame.
public enum HandshakeErrorCode: UInt8, Sendable {
    /// No protocol version in common.
    case version = 1
    /// The key proof failed (sent after a fixed delay, and says no more).
    case authentication = 2
    /// The server is full or the address is backing off.
    case busy = 3
}

extension CloseReason {
    /// Whether the handshake failed on the key or the credential: this side's check of the peer's
    /// proof, or the peer's refusal with ``HandshakeErrorCode/authentication``. A caller tells a
    /// wrong key from a busy or cut connection by this, not by the text.
    public var isAuthenticationFailure: Bool {
        switch self {
        case .authenticationFailed: return true
        case let .refusedByPeer(code, _): return code == HandshakeErrorCode.authentication.rawValue
        default: return false
        }
    }
}
