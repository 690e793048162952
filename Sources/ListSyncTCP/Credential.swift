import Foundation
import ListSyncIdentity
import ListSyncCrypto

/// What a device may do, as the daemon's operator granted it (Docs/Security.md, "Credentials").
///
/// The claims travel in the device's HELLO, in the clear; they are bound to the session because
/// the key the handshake proves is derived from them (``Credential/secret(for:masterKey:)``): a
/// changed claim gives another key, and the proof fails.
public struct DeviceClaims: Hashable, Sendable {
    /// The device's random 16-byte identity (what revocation names).
    public var id: [UInt8]
    /// A name for people (`listsync device list`), at most ``maxNameBytes`` bytes of UTF-8.
    public var name: String
    /// The documents it may use; nil: every document, and it may create documents.
    public var documents: [DocumentID]?
    /// Whether it may only read (subscribe, list); every edit and create is refused.
    public var readOnly: Bool
    /// When the credential stops working (seconds since 1970, UTC); nil: never.
    public var expires: UInt64?

    /// Bounds on the encoded claims (they must fit in the handshake's first frame).
    public static let maxNameBytes = 64, maxDocuments = 64
    /// The largest encoded claims: 1 + 16 + 1 + 8 + 1 + 64 + 2 + 64 · 16.
    public static let maxEncodedSize = 1 + 16 + 1 + 8 + 1 + maxNameBytes + 2 + maxDocuments * 16
    static let version: UInt8 = 1

    /// Claims for one device.
    ///
    /// - Throws: ``CredentialError/invalid(_:)`` for an id that is not 16 bytes, a name over
    ///   ``maxNameBytes`` bytes, or more than ``maxDocuments`` documents.
    public init(id: [UInt8], name: String, documents: [DocumentID]?, readOnly: Bool, expires: UInt64?) throws(CredentialError) {
        guard id.count == 16 else { throw .invalid("a device id is 16 bytes, not \(id.count)") }
        guard name.utf8.count <= Self.maxNameBytes, !name.isEmpty else {
            throw .invalid("a device name is 1 to \(Self.maxNameBytes) bytes of UTF-8")
        }
        if let documents, documents.count > Self.maxDocuments {
            throw .invalid("a credential names at most \(Self.maxDocuments) documents, not \(documents.count)")
        }
        self.id = id
        self.name = name
        self.documents = documents
        self.readOnly = readOnly
        self.expires = expires
    }

    /// Whether the claims allow `document`.
    public func allows(_ document: DocumentID) -> Bool { documents.map { $0.contains(document) } ?? true }

    /// Whether the credential has expired at `now` (seconds since 1970).
    public func isExpired(at now: UInt64) -> Bool { expires.map { now >= $0 } ?? false }

    /// The device id as 32 hexadecimal digits.
    public var idText: String { Hex.encode(id) }

    /// The canonical bytes: `version | id(16) | flags | [expires u64] | name(u8 len) |
    /// [count u16 | documents(16 each)]`; flags: 1 read-only, 2 scoped, 4 expires.
    public func encoded() -> [UInt8] {
        var b: [UInt8] = [Self.version]
        b += id
        let flags: UInt8 = (readOnly ? 1 : 0) | (documents != nil ? 2 : 0) | (expires != nil ? 4 : 0)
        b.append(flags)
        if let expires { b += (0..<8).map { UInt8(truncatingIfNeeded: expires >> (56 - 8 * $0)) } }
        let name = Array(name.utf8)
        b.append(UInt8(name.count))
        b += name
        if let documents {
            b += [UInt8(documents.count >> 8), UInt8(documents.count & 0xff)]
            for d in documents { b += d.bytes }
        }
        assert(b.count <= Self.maxEncodedSize)
        return b
    }

    /// Decodes ``encoded()``.
    ///
    /// - Throws: ``CredentialError/invalid(_:)`` for anything else (truncated, trailing bytes,
    ///   unknown version or flags, bounds exceeded, a name that is not UTF-8).
    public init(decoding bytes: some Collection<UInt8>) throws(CredentialError) {
        let b = Array(bytes)
        var i = 0
        func take(_ n: Int) throws(CredentialError) -> ArraySlice<UInt8> {
            guard n >= 0, b.count - i >= n else { throw .invalid("the claims are truncated") }
            defer { i += n }
            return b[i..<(i + n)]
        }
        guard try take(1).first == Self.version else { throw .invalid("unknown claims version") }
        let id = Array(try take(16))
        let flags = try take(1).first!
        guard flags & ~7 == 0 else { throw .invalid("unknown claim flags \(flags)") }
        var expires: UInt64?
        if flags & 4 != 0 { expires = try take(8).reduce(0) { $0 << 8 | UInt64($1) } }
        let nameLength = Int(try take(1).first!)
        guard let name = String(validating: try take(nameLength), as: UTF8.self) else { throw .invalid("the device name is not UTF-8") }
        var documents: [DocumentID]?
        if flags & 2 != 0 {
            let count = try take(2).reduce(0) { $0 << 8 | Int($1) }
            guard count <= Self.maxDocuments else { throw .invalid("\(count) documents is over \(Self.maxDocuments)") }
            documents = []
            for _ in 0..<count { documents!.append(DocumentID(bytes: try take(16))!) }
        }
        guard i == b.count else { throw .invalid("\(b.count - i) bytes after the claims") }
        try self.init(id: id, name: name, documents: documents, readOnly: flags & 1 != 0, expires: expires)
    }
}

/// A device's credential: its claims and the secret derived from them and the daemon's key.
/// It stands in for the daemon's key on that device (`--credential FILE`), and proves only what
/// the claims say.
public struct Credential: Hashable, Sendable {
    public var claims: DeviceClaims
    /// 32 bytes: HKDF-SHA256 of the daemon's key over the encoded claims.
    public var secret: [UInt8]

    /// The secret for `claims` under the daemon's `masterKey` (what the daemon recomputes in
    /// the handshake).
    public static func secret(for claims: [UInt8], masterKey: [UInt8]) -> [UInt8] {
        HKDFSHA256.deriveKey(ikm: masterKey, salt: Array("listsync device credential".utf8), info: claims, length: 32)
    }

    /// Issues a credential for `claims` under the daemon's key.
    public init(claims: DeviceClaims, masterKey: [UInt8]) {
        self.claims = claims
        secret = Self.secret(for: claims.encoded(), masterKey: masterKey)
    }

    /// The credential file: JSON with the claims in readable form (for people) and, in
    /// `claims` and `secret`, what the handshake uses.
    public func fileContents() -> [UInt8] {
        var object: [String: Any] = [
            "listsync-credential": 1,
            "device": claims.idText,
            "name": claims.name,
            "read-only": claims.readOnly,
            "claims": Data(claims.encoded()).base64EncodedString(),
            "secret": Hex.encode(secret),
        ]
        object["documents"] = claims.documents.map { $0.map(\.description) } ?? NSNull()
        object["expires"] = claims.expires.map { ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double($0))) } ?? NSNull()
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])) ?? Data()
        return Array(data) + [10]
    }

    /// Reads a credential file (``fileContents()``); the readable fields are not trusted, the
    /// encoded claims are.
    ///
    /// - Throws: ``CredentialError/invalid(_:)`` naming what is wrong.
    public init(fileContents bytes: [UInt8]) throws(CredentialError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              object["listsync-credential"] as? Int == 1 else {
            throw .invalid("not a listsync credential file")
        }
        guard let c = object["claims"] as? String, let claims = Data(base64Encoded: c) else { throw .invalid("no claims in it") }
        guard let s = object["secret"] as? String, let secret = Hex.decode(s), secret.count == 32 else {
            throw .invalid("no 32-byte secret in it")
        }
        self.claims = try DeviceClaims(decoding: Array(claims))
        self.secret = secret
    }
}

/// Why claims or a credential cannot be used.
public enum CredentialError: Error, Equatable, CustomStringConvertible {
    case invalid(String)

    public var description: String {
        switch self {
        case let .invalid(why): return "invalid credential: \(why)"
        }
    }
}

/// What a client proves to a daemon: the daemon's key (the operator, peer daemons) or a device's
/// credential.
public enum ClientAuthentication: Sendable, Equatable {
    case key([UInt8])
    case credential(Credential)

    /// The key the handshake proves.
    var handshakeKey: [UInt8] {
        switch self {
        case let .key(k): return k
        case let .credential(c): return c.secret
        }
    }

    /// The claims sent in HELLO, if any.
    var claims: [UInt8]? {
        if case let .credential(c) = self { return c.claims.encoded() }
        return nil
    }
}
