import ListCRDT
import ListSyncCrypto
import ListSyncTCP

/// A browser's session with the web view: made by a login link, named by its cookie.
public struct WebSession: Sendable, Hashable {
    /// The cookie's value: 32 random bytes in hex.
    public var id: String
    /// What state-changing requests must carry in `X-ListSync-CSRF` (32 random bytes in hex).
    public var csrf: String
    /// The device's claims; nil: the daemon's key (the operator).
    public var claims: DeviceClaims?
    /// When the session ends, seconds since 1970.
    public var expires: UInt64
}

/// The web view's sessions and the login links taken (Docs/Web.md, "Access"): no I/O, no clock
/// and no randomness of its own (each call is handed them).
///
/// Bounded: at most ``maxSessions`` sessions (a login past it ends the oldest) and
/// ``maxUsedLinks`` links remembered until they expire (a login past it is refused with
/// ``WebLoginError/busy``, rather than forgetting a link that could then be used again).
public struct WebSessionTable: Sendable {
    /// How long a session lasts, in seconds (8 hours), or less: until the credential expires.
    public static let sessionLifetime: UInt64 = 8 * 3600
    /// Sessions at most.
    public let maxSessions: Int
    /// Login links remembered (until their expiry) at most.
    public let maxUsedLinks: Int
    private(set) var sessions: [String: WebSession] = [:]
    /// Links taken: nonce (hex) → expiry.
    private(set) var usedLinks: [String: UInt64] = [:]

    /// An empty table.
    public init(maxSessions: Int = 64, maxUsedLinks: Int = 1024) {
        precondition(maxSessions > 0 && maxUsedLinks > 0)
        (self.maxSessions, self.maxUsedLinks) = (maxSessions, maxUsedLinks)
    }

    /// Sessions open now.
    public var count: Int { sessions.count }

    /// Takes a login link: verifies it under `masterKey`, refuses one used before, checks the
    /// device with `refusal` (revoked, unknown, expired: its words), and opens a session with
    /// ids from `random` (32 bytes a call).
    ///
    /// - Throws: ``WebLoginError``; nothing changes then.
    /// - Complexity: O(s + l) for s sessions and l links remembered (expired ones are dropped).
    public mutating func login(_ token: WebLoginToken, masterKey: [UInt8], now: UInt64,
                               refusal: (DeviceClaims) -> String?, random: () -> [UInt8]) throws(WebLoginError) -> WebSession {
        expire(now: now)
        let claims = try token.verify(masterKey: masterKey, now: now)
        let nonce = Hex.encode(token.nonce)
        guard usedLinks[nonce] == nil else { throw .used }
        guard usedLinks.count < maxUsedLinks else { throw .busy }
        if let claims, let why = refusal(claims) { throw .deviceRefused(why) }
        usedLinks[nonce] = token.expires
        if sessions.count >= maxSessions, let oldest = sessions.values.min(by: { $0.expires < $1.expires }) {
            sessions[oldest.id] = nil
        }
        var expires = now + Self.sessionLifetime
        if let e = claims?.expires { expires = min(expires, e) }
        let session = WebSession(id: Hex.encode(random()), csrf: Hex.encode(random()), claims: claims, expires: expires)
        assert(session.id.count == 64 && session.csrf.count == 64, "session ids are 32 random bytes")
        sessions[session.id] = session
        return session
    }

    /// The session a cookie names, if it is open and not expired.
    public func session(_ id: String?, now: UInt64) -> WebSession? {
        guard let id, let s = sessions[id], now < s.expires else { return nil }
        return s
    }

    /// Ends a session (logout, or its device's access ended).
    public mutating func end(_ id: String) { sessions[id] = nil }

    /// Ends every session of the device `deviceID` (32 hex digits); returns their ids.
    public mutating func endDevice(_ deviceID: String) -> [String] {
        let ended = sessions.values.filter { $0.claims?.idText == deviceID }.map(\.id)
        for id in ended { sessions[id] = nil }
        return ended
    }

    /// Drops expired sessions and the links whose expiry passed (they fail by time anyway).
    ///
    /// - Complexity: O(s + l).
    public mutating func expire(now: UInt64) {
        sessions = sessions.filter { now < $0.value.expires }
        usedLinks = usedLinks.filter { now < $0.value }
    }
}
