import Foundation
import Testing
import ListCRDT
import ListSyncCrypto
import ListSyncHTTP
import ListSyncTCP
@testable import ListSyncWeb

@Suite("Web view login links and sessions (no I/O)")
struct WebLoginTests {
    let key = [UInt8](repeating: 7, count: 32)
    let doc = DocumentID(high: 0x1234, low: 0x5678)
    let now: UInt64 = 1_800_000_000

    func device(documents: [DocumentID]? = nil, expires: UInt64? = nil) throws -> Credential {
        Credential(claims: try DeviceClaims(id: [UInt8](repeating: 9, count: 16), name: "phone", documents: documents, readOnly: false,
                                            expires: expires), masterKey: key)
    }

    /// Counting random bytes: each call a new 32-byte value.
    final class Counter: @unchecked Sendable { var n: UInt8 = 0; func next() -> [UInt8] { n += 1; return [UInt8](repeating: n, count: 32) } }

    @Test("a key's link and a device's link verify, parse back from their text, and carry the document")
    func roundTrip() throws {
        let t = WebLoginToken(authentication: .key(key), document: doc, now: now, nonce: [UInt8](repeating: 1, count: 16))
        let parsed = try WebLoginToken(parsing: t.text)
        #expect(parsed == t)
        #expect(try parsed.verify(masterKey: key, now: now) == nil)
        #expect(parsed.document == doc)
        let c = try device(documents: [doc])
        let d = try WebLoginToken(parsing: WebLoginToken(authentication: .credential(c), document: nil, now: now).text)
        #expect(try d.verify(masterKey: key, now: now + 1) == c.claims)
        #expect(d.document == nil)
    }

    @Test("a link under another key, with changed claims, a changed byte anywhere, or past its time is refused")
    func refusals() throws {
        let t = WebLoginToken(authentication: .key(key), document: doc, now: now)
        #expect(throws: WebLoginError.badSignature) { try t.verify(masterKey: [UInt8](repeating: 8, count: 32), now: now) }
        #expect(throws: WebLoginError.expired) { try t.verify(masterKey: key, now: now + WebLoginToken.lifetime) }
        // Every single-character change of the text either does not parse or does not verify.
        let text = Array(t.text)
        var checked = 0
        for i in text.indices where text[i] != "." {
            var changed = text
            changed[i] = text[i] == "0" ? "1" : "0"
            guard let p = try? WebLoginToken(parsing: String(changed)) else { continue }
            #expect(throws: WebLoginError.self) { try p.verify(masterKey: key, now: now) }
            checked += 1
        }
        #expect(checked > 100)
        // A device that widens its own claims (every document) gets another secret: refused.
        let scoped = try device(documents: [doc])
        var forged = WebLoginToken(authentication: .credential(scoped), document: nil, now: now)
        forged.claims = try device().claims.encoded()
        #expect(throws: WebLoginError.badSignature) { try forged.verify(masterKey: key, now: now) }
        for bad in ["", "1.-.00.1.-.00", "2.-.00000000000000000000000000000000.1.-." + String(repeating: "0", count: 64),
                    String(repeating: "x", count: 5000), "1.!!.00000000000000000000000000000000.1.-." + String(repeating: "0", count: 64)] {
            #expect(throws: WebLoginError.self) { try WebLoginToken(parsing: bad) }
        }
    }

    @Test("a link is taken once; sessions end at their time or the credential's expiry; the table stays bounded")
    func sessionTable() throws {
        var table = WebSessionTable(maxSessions: 2, maxUsedLinks: 3)
        let random = Counter()
        let t = WebLoginToken(authentication: .key(key), document: nil, now: now)
        let s = try table.login(t, masterKey: key, now: now, refusal: { _ in nil }, random: random.next)
        #expect(s.claims == nil && s.id.count == 64 && s.csrf != s.id)
        #expect(table.session(s.id, now: now + 10) == s)
        #expect(table.session(s.id, now: s.expires) == nil)
        #expect(table.session("nope", now: now) == nil && table.session(nil, now: now) == nil)
        #expect(throws: WebLoginError.used) { try table.login(t, masterKey: key, now: now + 1, refusal: { _ in nil }, random: random.next) }

        let c = try device(expires: now + 100)
        let ds = try table.login(WebLoginToken(authentication: .credential(c), document: nil, now: now), masterKey: key, now: now,
                                 refusal: { _ in nil }, random: random.next)
        #expect(ds.expires == now + 100, "a session ends when its credential does")
        #expect(throws: WebLoginError.deviceRefused("revoked")) {
            try table.login(WebLoginToken(authentication: .credential(c), document: nil, now: now), masterKey: key, now: now,
                            refusal: { _ in "revoked" }, random: random.next)
        }
        // A third session ends the oldest; a fourth link (three remembered) waits for expiries.
        _ = try table.login(WebLoginToken(authentication: .key(key), document: nil, now: now), masterKey: key, now: now,
                            refusal: { _ in nil }, random: random.next)
        #expect(table.count == 2 && table.session(ds.id, now: now) == nil)
        #expect(throws: WebLoginError.busy) {
            try table.login(WebLoginToken(authentication: .key(key), document: nil, now: now), masterKey: key, now: now,
                            refusal: { _ in nil }, random: random.next)
        }
        let later = now + WebLoginToken.lifetime + 1
        _ = try table.login(WebLoginToken(authentication: .key(key), document: nil, now: later), masterKey: key, now: later,
                            refusal: { _ in nil }, random: random.next)
        #expect(table.endDevice(c.claims.idText).isEmpty)
    }

    @Test("cookies, hosts, CSRF, Origin and query parameters")
    func requestChecks() {
        let r = HTTPRequest(method: "POST", path: "/api/docs", query: "name=a%20b+c&x&sections=A,B&bad=%zz",
                            headers: [("Host", "127.0.0.1:80"), ("Cookie", "a=1; listsync_session=abc ; b=2"), ("X-ListSync-CSRF", "tok")])
        #expect(WebRequestCheck.cookie("listsync_session", in: r) == "abc")
        #expect(WebRequestCheck.cookie("missing", in: r) == nil)
        #expect(WebRequestCheck.parameter("name", in: r.query) == "a b c")
        #expect(WebRequestCheck.parameter("x", in: r.query) == "")
        #expect(WebRequestCheck.parameter("bad", in: r.query) == nil)
        #expect(WebRequestCheck.parameter("sections", in: r.query) == "A,B")
        #expect(WebRequestCheck.hostAllowed(r, allowed: ["127.0.0.1:80"]))
        #expect(!WebRequestCheck.hostAllowed(HTTPRequest(method: "GET", path: "/", headers: [("Host", "evil.example:80")]), allowed: ["127.0.0.1:80"]))
        #expect(WebRequestCheck.mayChangeState(r, csrf: "tok"))
        #expect(!WebRequestCheck.mayChangeState(r, csrf: "other"))
        var noToken = r
        noToken.headers.removeLast()
        #expect(!WebRequestCheck.mayChangeState(noToken, csrf: "tok"))
        var foreign = r
        foreign.headers.append(("Origin", "http://evil.example"))
        #expect(!WebRequestCheck.mayChangeState(foreign, csrf: "tok"))
        var crossSite = r
        crossSite.headers.append(("Sec-Fetch-Site", "cross-site"))
        #expect(!WebRequestCheck.mayChangeState(crossSite, csrf: "tok"))
        var sameOrigin = r
        sameOrigin.headers.append(("Origin", "http://127.0.0.1:80"))
        #expect(WebRequestCheck.mayChangeState(sameOrigin, csrf: "tok"))
        #expect(WebRequestCheck.mayChangeState(HTTPRequest(method: "GET", path: "/"), csrf: "tok"))
        let cookie = WebRequestCheck.setCookie(WebSession(id: "abc", csrf: "t", claims: nil, expires: 200), now: 100)
        #expect(cookie == "listsync_session=abc; Path=/; HttpOnly; SameSite=Strict; Max-Age=100")
    }
}
