import ListSyncCrypto
import ListSyncHTTP

/// The checks every request to the web view passes before a handler sees it (Docs/Web.md,
/// "Security notes"): no I/O, so each is tested on its own.
public enum WebRequestCheck {
    /// The session cookie's name.
    public static let cookieName = "listsync_session"
    /// The header that carries the CSRF token on state-changing requests.
    public static let csrfHeader = "X-ListSync-CSRF"

    /// The value of cookie `name` in the request's `Cookie` headers (RFC 6265 §5.4), if any.
    ///
    /// - Complexity: O(n) in the size of the headers.
    public static func cookie(_ name: String, in request: HTTPRequest) -> String? {
        for (field, value) in request.headers where field.lowercased() == "cookie" {
            for pair in value.split(separator: ";") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if kv.count == 2, kv[0].trimmingCharacters(in: " ") == name { return kv[1].trimmingCharacters(in: " ") }
            }
        }
        return nil
    }

    /// Whether the `Host` header names this server (against DNS rebinding: a page of another
    /// name that resolves to loopback is refused): one of `allowed` (`127.0.0.1:7380`,
    /// `localhost:7380`, …), compared without case.
    public static func hostAllowed(_ request: HTTPRequest, allowed: Set<String>) -> Bool {
        guard let host = request.header("Host") else { return false }
        return allowed.contains(host.lowercased())
    }

    /// Whether a state-changing request (anything but `GET` and `HEAD`) may go on: its `Origin`,
    /// when sent, is this server (`http://` + its `Host`), `Sec-Fetch-Site`, when sent, is
    /// `same-origin`, and it carries the session's CSRF token (compared in constant time).
    /// `GET` and `HEAD` change nothing and pass.
    public static func mayChangeState(_ request: HTTPRequest, csrf: String) -> Bool {
        if request.method == "GET" || request.method == "HEAD" { return true }
        if let origin = request.header("Origin"), origin.lowercased() != "http://" + (request.header("Host") ?? "").lowercased() { return false }
        if let site = request.header("Sec-Fetch-Site"), site != "same-origin" { return false }
        guard let presented = request.header(csrfHeader) else { return false }
        return ConstantTime.equals(Array(presented.utf8), Array(csrf.utf8))
    }

    /// The `Set-Cookie` value of a session: HttpOnly (no script reads it), SameSite=Strict (no
    /// other site's page sends it), Path=/, and Max-Age until the session ends.
    public static func setCookie(_ session: WebSession, now: UInt64) -> String {
        "\(cookieName)=\(session.id); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(session.expires > now ? session.expires - now : 0)"
    }

    /// The `Set-Cookie` value that removes the session cookie.
    public static var clearCookie: String { "\(cookieName)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0" }

    /// The value of query parameter `name` (percent-decoded, `+` as a space), if present.
    ///
    /// - Complexity: O(n) in the query's length.
    public static func parameter(_ name: String, in query: String?) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard percentDecoded(String(kv[0])) == name else { continue }
            return kv.count == 2 ? percentDecoded(String(kv[1])) : ""
        }
        return nil
    }

    /// `%XX` decoded and `+` as a space; nil for a bad escape or bytes that are not UTF-8.
    static func percentDecoded(_ s: String) -> String? {
        var out: [UInt8] = []
        var bytes = s.utf8.makeIterator()
        while let b = bytes.next() {
            switch b {
            case UInt8(ascii: "+"): out.append(0x20)
            case UInt8(ascii: "%"):
                guard let h = bytes.next(), let l = bytes.next(), let v = UInt8(String(decoding: [h, l], as: UTF8.self), radix: 16) else { return nil }
                out.append(v)
            default: out.append(b)
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}

extension Substring {
    func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}
