import ListSyncCrypto

/// A bearer token (RFC 6750) that an ``HTTPServer``'s handler asks for: a request is let in only
/// with `Authorization: Bearer <token>`.
///
/// ```swift
/// let token = HTTPBearerToken("3f1c…")!
/// let admin = try await HTTPServer.listen(host: "0.0.0.0", port: 9090) { request in
///     guard request.path == "/healthz" || token.authorizes(request) else { return token.challenge(request) }
///     …
/// }
/// ```
///
/// Only the token's SHA-256 digest is kept, and a presented token is compared by digest in
/// constant time, so the time of a refusal says nothing of the token, not even its length.
public struct HTTPBearerToken: Sendable {
    /// How long a token may be, in characters.
    public static let lengths = 16...512
    /// The realm named in challenges.
    public let realm: String
    private let digest: [UInt8]

    /// A token from its text (surrounding spaces and newlines are not part of it); `nil` unless it
    /// is 16 to 512 characters of the RFC 6750 `b64token` alphabet (`A-Z a-z 0-9 - . _ ~ + /`,
    /// then `=`s).
    public init?(_ token: some StringProtocol, realm: String = "listsync") {
        let text = Self.trimmed(Array(token.utf8))
        guard Self.lengths.contains(text.count), Self.isB64Token(text) else { return nil }
        digest = SHA256.hash(text)
        self.realm = realm
    }

    /// Whether `request`'s first `Authorization` field is `Bearer` (any case) and this token.
    ///
    /// - Complexity: O(*n*) in the size of the request's headers.
    public func authorizes(_ request: HTTPRequest) -> Bool {
        guard let presented = Self.presented(request) else { return false }
        return ConstantTime.equals(SHA256.hash(presented), digest)
    }

    /// The answer to a request this token does not authorize: 401 with `WWW-Authenticate: Bearer`
    /// (and `error="invalid_token"` when a bearer token was presented, RFC 6750 §3).
    public func challenge(_ request: HTTPRequest) -> HTTPResponse {
        var value = "Bearer realm=\"\(realm)\""
        if Self.presented(request) != nil { value += ", error=\"invalid_token\"" }
        return HTTPResponse(status: 401, text: "unauthorized: send Authorization: Bearer <token>\n",
                            headers: [("WWW-Authenticate", value)])
    }

    /// The token a request presents, if its `Authorization` field is `Bearer <token>`.
    static func presented(_ request: HTTPRequest) -> [UInt8]? {
        guard let field = request.header("Authorization") else { return nil }
        let bytes = Array(field.utf8)
        let scheme = Array("bearer".utf8)
        guard bytes.count > scheme.count, bytes[scheme.count] == 0x20,
              zip(bytes.prefix(scheme.count), scheme).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        return trimmed(Array(bytes[scheme.count...]))
    }

    private static func trimmed(_ b: [UInt8]) -> [UInt8] {
        let space: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0a || $0 == 0x0d }
        guard let first = b.firstIndex(where: { !space($0) }), let last = b.lastIndex(where: { !space($0) }) else { return [] }
        return Array(b[first...last])
    }

    private static func isB64Token(_ b: [UInt8]) -> Bool {
        let body = b.prefix { $0 != UInt8(ascii: "=") }
        guard !body.isEmpty, b[body.count...].allSatisfy({ $0 == UInt8(ascii: "=") }) else { return false }
        return body.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)
                || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") || c == UInt8(ascii: "~")
                || c == UInt8(ascii: "+") || c == UInt8(ascii: "/")
        }
    }
}
