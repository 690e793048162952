import Foundation
import ListCRDT
import ListSyncCrypto
import ListSyncTCP

/// A one-time login link's token (`listsync open`, Docs/Web.md, "Access"): made by whoever holds
/// the daemon's key or a device's credential, checked by the web view with the daemon's key.
///
/// `1.<claims>.<nonce>.<expires>.<document>.<mac>`: the device's encoded claims in base64url (`-`
/// for the key), 16 random bytes in hex, the expiry in seconds since 1970, the document to open
/// (32 hex digits, `-` for the list) and HMAC-SHA256 of the rest under the secret the handshake
/// would prove: the key, or the credential's secret (which the daemon derives from the claims and
/// its key, so the claims cannot be changed). A token is taken once (``WebSessionTable``).
public struct WebLoginToken: Sendable, Hashable {
    /// The device's encoded claims; nil: the daemon's key.
    public var claims: [UInt8]?
    /// 16 random bytes: what makes the token one-time.
    public var nonce: [UInt8]
    /// When the link stops working, seconds since 1970.
    public var expires: UInt64
    /// The document the link opens; nil: the list of documents.
    public var document: DocumentID?
    /// The MAC over the rest.
    public var mac: [UInt8]

    /// How long a login link works, in seconds.
    public static let lifetime: UInt64 = 120
    /// The longest token text accepted (claims of 64 documents in base64url, and the rest).
    public static let maxLength = 2048

    /// A token for `authentication` (the key or a credential) opening `document`, valid from
    /// `now` for ``lifetime`` seconds, with `nonce` (16 random bytes).
    public init(authentication: ClientAuthentication, document: DocumentID?, now: UInt64, nonce: [UInt8] = SecureRandom.bytes(16)) {
        precondition(nonce.count == 16, "a login nonce is 16 bytes")
        let secret: [UInt8]
        switch authentication {
        case let .key(k): (claims, secret) = (nil, k)
        case let .credential(c): (claims, secret) = (c.claims.encoded(), c.secret)
        }
        self.nonce = nonce
        self.expires = now + Self.lifetime
        self.document = document
        self.mac = []
        mac = HMACSHA256.authenticate(Array(signedText.utf8), key: secret)
    }

    /// The token as it goes in a URL.
    public var text: String { signedText + "." + Hex.encode(mac) }

    private var signedText: String {
        "1." + (claims.map(Self.base64URL) ?? "-") + "." + Hex.encode(nonce) + "." + String(expires) + "."
            + (document.map(\.description) ?? "-")
    }

    /// Parses a token's text (nothing is verified yet: ``verify(masterKey:now:)``).
    ///
    /// - Throws: ``WebLoginError/malformed(_:)`` saying which part is wrong.
    /// - Complexity: O(n) in the text's length.
    public init(parsing text: String) throws(WebLoginError) {
        guard text.utf8.count <= Self.maxLength else { throw .malformed("longer than \(Self.maxLength) characters") }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 6, parts[0] == "1" else { throw .malformed("not a version 1 login token") }
        if parts[1] == "-" { claims = nil } else {
            guard let c = Self.decodeBase64URL(parts[1]) else { throw .malformed("the claims are not base64url") }
            claims = c
        }
        guard let n = Hex.decode(parts[2]), n.count == 16 else { throw .malformed("the nonce is not 32 hex digits") }
        nonce = n
        guard let e = UInt64(parts[3]) else { throw .malformed("the expiry is not a number") }
        expires = e
        if parts[4] == "-" { document = nil } else {
            guard let d = DocumentID(hex: parts[4]) else { throw .malformed("the document is not 32 hex digits") }
            document = d
        }
        guard let m = Hex.decode(parts[5]), m.count == 32 else { throw .malformed("the MAC is not 64 hex digits") }
        mac = m
    }

    /// Checks the MAC under `masterKey` (directly, or through the credential secret it derives
    /// for the claims) and the expiry; returns the device's claims (nil: the daemon's key).
    ///
    /// - Throws: ``WebLoginError`` (a MAC that fails, claims that do not decode, an expired link).
    public func verify(masterKey: [UInt8], now: UInt64) throws(WebLoginError) -> DeviceClaims? {
        let secret = claims.map { Credential.secret(for: $0, masterKey: masterKey) } ?? masterKey
        guard HMACSHA256.isValid(mac, for: Array(signedText.utf8), key: secret) else { throw .badSignature }
        guard now < expires else { throw .expired }
        guard expires <= now + Self.lifetime + 300 else { throw .malformed("the expiry is too far ahead") }
        guard let claims else { return nil }
        do { return try DeviceClaims(decoding: claims) } catch { throw .malformed("\(error)") }
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decodeBase64URL(_ text: String) -> [UInt8]? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map(Array.init)
    }
}

/// Why a login link or a request was refused by the web view.
public enum WebLoginError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The token does not parse.
    case malformed(String)
    /// Its MAC does not hold under the daemon's key (another daemon's link, or altered).
    case badSignature
    /// Its time is over.
    case expired
    /// It was used already (a login link works once).
    case used
    /// The device's credential is revoked, unknown or expired.
    case deviceRefused(String)
    /// Too many logins at once (the table of used links is full until some expire).
    case busy

    public var description: String {
        switch self {
        case let .malformed(why): return "not a login link: \(why)"
        case .badSignature: return "this login link was not made with this daemon's key or a credential it issued"
        case .expired: return "this login link has expired; run `listsync open` again"
        case .used: return "this login link was used already; run `listsync open` again"
        case let .deviceRefused(why): return why
        case .busy: return "too many logins in the last minutes; try again shortly"
        }
    }
}
