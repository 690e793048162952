#if canImport(Glibc)
import Foundation
import ListSyncTestSupport
import ListSyncTestTraits
import Testing

/// A web view session spoken to over plain HTTP on real sockets, as the page speaks: signed in
/// with a one-time link from `listsync open`, then its cookie on every request and its CSRF token
/// on every POST.
struct WebHTTPSession {
    let port: UInt16, cookie: String, csrf: String

    init(_ f: WebFixture) async throws {
        port = f.webPort
        let link = try f.loginURL()
        let start = try #require(link.range(of: "/login?"))
        let path = String(link[start.lowerBound...])
        let login = try await Self.exchange("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n", port: port)
        let set = try #require(login.head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie: listsync_session=") })
        cookie = String(set.dropFirst("set-cookie: ".count).prefix { $0 != ";" })
        let page = try await Self.exchange("GET /doc/\(f.doc) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nCookie: \(cookie)\r\n\r\n", port: port)
        let meta = try #require(page.body.range(of: "<meta name=\"csrf\" content=\""))
        csrf = String(page.body[meta.upperBound...].prefix { $0 != "\"" })
    }

    /// One request and its whole answer (the server sends `Content-Length`).
    static func exchange(_ request: String, port: UInt16) async throws -> (status: Int, head: String, body: String) {
        let raw = try #require(RawSocket(port: port, source: "127.0.0.1"))
        #expect(raw.send(Array(request.utf8)))
        var got: [UInt8] = []
        while true {
            let text = String(decoding: got, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = String(text[..<end.lowerBound])
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                let body = String(text[end.upperBound...])
                if body.utf8.count >= length {
                    return (Int(head.split(separator: " ")[1]) ?? 0, head, body)
                }
            }
            let more = await raw.readSome(timeout: livenessGuardSeconds)
            if more.isEmpty { throw DaemonTestError("the web view did not answer \(request.prefix(80)): \(text)") }
            got += more
        }
    }

    /// A POST of the page's API with the query `parameters` (percent-encoded, `+` too): the status
    /// and the JSON answer.
    func post(_ path: String, _ parameters: [String: String]) async throws -> (Int, [String: Any]) {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        let query = parameters.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
        let answer = try await Self.exchange("POST \(path)?\(query) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nCookie: \(cookie)\r\n"
                                             + "X-ListSync-CSRF: \(csrf)\r\nContent-Length: 0\r\n\r\n", port: port)
        return (answer.status, (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String: Any] ?? [:])
    }

    /// The document's event stream (`GET /api/docs/ID/events`), read as it comes.
    func events(_ doc: String) throws -> WebEventStream {
        let raw = try #require(RawSocket(port: port, source: "127.0.0.1"))
        #expect(raw.send(Array("GET /api/docs/\(doc)/events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nCookie: \(cookie)\r\n\r\n".utf8)))
        return WebEventStream(raw: raw)
    }
}

/// The server-sent events of one stream: the latest `state` read.
final class WebEventStream {
    let raw: RawSocket
    private var buffer = ""
    private(set) var latest: [String: Any] = [:]
    init(raw: RawSocket) { self.raw = raw }

    /// Reads states until one makes `condition` true (true), or the stream stays quiet for the
    /// liveness guard (false).
    func waitForState(_ condition: ([String: Any]) -> Bool) async -> Bool {
        if condition(latest) { return true }
        while true {
            let more = await raw.readSome(upTo: 65536, timeout: livenessGuardSeconds)
            if more.isEmpty { return false }
            buffer += String(decoding: more, as: UTF8.self)
            while let end = buffer.range(of: "\n\n") {
                let event = buffer[..<end.lowerBound]
                buffer = String(buffer[end.upperBound...])
                guard event.contains("event: state"), let data = event.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }),
                      let state = try? JSONSerialization.jsonObject(with: Data(data.dropFirst(6).utf8)) as? [String: Any] else { continue }
                latest = state
                if condition(state) { return true }
            }
        }
    }

    /// The fields of the item showing `text` in the latest state.
    func fields(of text: String) -> [String: Any]? {
        let sections = latest["sections"] as? [[String: Any]] ?? []
        let item = sections.flatMap { $0["items"] as? [[String: Any]] ?? [] }.first { $0["text"] as? String == text }
        return item?["fields"] as? [String: Any]
    }

    /// The section titled `text` in the latest state.
    func section(_ text: String) -> [String: Any]? {
        (latest["sections"] as? [[String: Any]] ?? []).first { $0["text"] as? String == text }
    }

    /// The id of the item showing `text` in the latest state.
    func item(_ text: String) -> String? {
        let sections = latest["sections"] as? [[String: Any]] ?? []
        return sections.flatMap { $0["items"] as? [[String: Any]] ?? [] }.first { $0["text"] as? String == text }?["id"] as? String
    }
}

@Suite("The web view's field API over plain HTTP (no browser): every field kind edited, fields added and removed, shown live to another session",
       .ownThread, .serialized, .hangGuard)
struct WebFieldHTTPTests {
    @Test("a counter stepped up and down adds to the CLI's increments; one set member added (with a comma) and one removed; a date and bytes added and shown in the state; a field added where one exists is refused; a field removed leaves the others; bad input is 400 and writes nothing; another session's stream shows each change")
    func everyKindOverHTTP() async throws {
        let f = try WebFixture(browser: false)
        defer { f.close() }
        try f.cli(["set", f.doc, "0.0", "title=milk", "--increment", "votes=2", "--add", "tags=dairy"])
        let a = try await WebHTTPSession(f), b = try await WebHTTPSession(f)
        let watch = try b.events(f.doc)
        #expect(await watch.waitForState { _ in watch.fields(of: "milk")?["title"] as? String == "milk" })
        let item = try #require(watch.item("milk"))
        let api = "/api/docs/\(f.doc)/field"
        func field(_ extra: [String: String]) async throws -> (Int, [String: Any]) {
            try await a.post(api, extra.merging(["item": item]) { x, _ in x })
        }
        let before = try f.operations()

        // The counter's + and − buttons: one increment each, added to what the CLI did meanwhile.
        #expect(try await field(["name": "votes", "kind": "counter", "by": "1"]).0 == 200)
        try f.cli(["set", f.doc, "0.0", "--increment", "votes=10"])
        #expect(try await field(["name": "votes", "kind": "counter", "by": "1"]).0 == 200)
        #expect(try await field(["name": "votes", "kind": "counter", "by": "-1"]).0 == 200)
        #expect(await watch.waitForState { _ in (watch.fields(of: "milk")?["votes"] as? [String: Any])?["counter"] as? Int == 13 },
                "\(String(describing: watch.fields(of: "milk")))")

        // One set member added, commas and all; one removed; the others stay.
        let (added, answer) = try await field(["name": "tags", "kind": "set", "add": "cold, fresh"])
        #expect(added == 200 && answer["operations"] as? Int == 1, "\(answer)")
        #expect(try await field(["name": "tags", "kind": "set", "remove": "dairy"]).0 == 200)
        #expect(await watch.waitForState { _ in (watch.fields(of: "milk")?["tags"] as? [String: Any])?["set"] as? [String] == ["cold, fresh"] },
                "\(String(describing: watch.fields(of: "milk")))")

        // A date and bytes, added as new fields; the state (and the CLI) show them typed.
        #expect(try await field(["name": "when", "kind": "date", "value": "2026-11-29T10:00:00Z", "new": "1"]).0 == 200)
        #expect(try await field(["name": "blob", "kind": "bytes", "value": "aGVsbG8+Pz8=", "new": "1"]).0 == 200)
        #expect(await watch.waitForState { _ in (watch.fields(of: "milk")?["blob"] as? [String: Any])?["bytes"] as? String == "aGVsbG8+Pz8=" })
        #expect((watch.fields(of: "milk")?["when"] as? [String: Any])?["date"] as? String == "2026-11-29T10:00:00.000Z")
        let shown = try FieldProcessTests.daemonFields(f.daemon, f.doc)
        #expect((shown["when"] as? [String: Any])?["date"] as? String == "2026-11-29T10:00:00.000Z", "\(shown)")

        // New fields of the other kinds; a new field whose name is taken is refused, nothing written.
        #expect(try await field(["name": "stars", "kind": "counter", "by": "3", "new": "1"]).0 == 200)
        #expect(try await field(["name": "notes", "kind": "text", "value": "buy two", "was": "", "new": "1"]).0 == 200)
        let taken = try f.operations()
        let (refused, why) = try await field(["name": "votes", "kind": "number", "value": "1", "new": "1"])
        #expect(refused == 409 && (why["error"] as? String ?? "").contains("exists already"), "\(why)")
        #expect(try f.operations() == taken)

        // Removing a field: gone, the others kept.
        #expect(try await field(["name": "title", "kind": "unset"]).0 == 200)
        #expect(await watch.waitForState { _ in watch.fields(of: "milk")?["title"] == nil })
        let after = try #require(watch.fields(of: "milk"))
        #expect(Set(after.keys) == ["votes", "tags", "when", "blob", "stars", "notes"], "\(after)")
        #expect(after["notes"] as? String == "buy two" && (after["stars"] as? [String: Any])?["counter"] as? Int == 3)

        // Bad input: 400 with the reason, nothing written.
        let quiet = try f.operations()
        for (params, words) in [(["name": "votes", "kind": "counter", "by": "0"], "non-zero"),
                                (["name": "when", "kind": "date", "value": "tomorrow"], "ISO 8601"),
                                (["name": "blob", "kind": "bytes", "value": "not base64!"], "base64"),
                                (["name": "tags", "kind": "set", "add": ""], "not empty")] {
            let (status, answer) = try await field(params)
            #expect(status == 400 && (answer["error"] as? String ?? "").contains(words), "\(params): \(status) \(answer)")
        }
        #expect(try f.operations() == quiet)
        // The CLI's increment, then the page's: 3 steps, 2 members, 2 values, 2 new fields, 1 removal.
        #expect(quiet == before + 1 + 3 + 2 + 2 + 2 + 1, "\(quiet) \(before)")
    }

    @Test("a section's fields: the CLI inserts a section with fields as one operation; the page's API edits a section's fields with section= as an item's (a new counter from 0 and its step, a value, a set member, a text, a removal); the state shows them; an unknown section is 409 and writes nothing")
    func sectionFieldsOverHTTP() async throws {
        let f = try WebFixture(browser: false)
        defer { f.close() }
        let a = try await WebHTTPSession(f), b = try await WebHTTPSession(f)
        let watch = try b.events(f.doc)
        #expect(await watch.waitForState { _ in watch.section("Other") != nil })
        let before = try f.operations()
        try f.cli(["insert", f.doc, "2", "Done", "color=green", "--increment", "limit=3"])
        #expect(try f.operations() == before + 1, "a section inserted with its fields is one operation")
        #expect(await watch.waitForState { _ in (watch.section("Done")?["fields"] as? [String: Any])?["color"] as? String == "green" })
        let section = try #require(watch.section("Done")?["id"] as? String)
        func field(_ extra: [String: String]) async throws -> (Int, [String: Any]) {
            try await a.post("/api/docs/\(f.doc)/field", extra.merging(["section": section]) { x, _ in x })
        }
        // A new counter that starts at 0 (the page's "+ field" of kind counter with no value), then one step.
        #expect(try await field(["name": "done", "kind": "counter", "by": "0", "new": "1"]).0 == 200)
        #expect(await watch.waitForState { _ in ((watch.section("Done")?["fields"] as? [String: Any])?["done"] as? [String: Any])?["counter"] as? Int == 0 },
                "\(String(describing: watch.section("Done")))")
        #expect(try await field(["name": "done", "kind": "counter", "by": "1"]).0 == 200)
        #expect(try await field(["name": "color", "kind": "string", "value": "blue"]).0 == 200)
        #expect(try await field(["name": "tags", "kind": "set", "add": "x", "new": "1"]).0 == 200)
        #expect(try await field(["name": "notes", "kind": "text", "value": "wip", "was": "", "new": "1"]).0 == 200)
        #expect(try await field(["name": "limit", "kind": "unset"]).0 == 200)
        #expect(await watch.waitForState { _ in (watch.section("Done")?["fields"] as? [String: Any])?["limit"] == nil })
        let shown = try #require(watch.section("Done"))
        let fields = try #require(shown["fields"] as? [String: Any])
        #expect(Set(fields.keys) == ["done", "color", "tags", "notes"], "\(fields)")
        #expect((fields["done"] as? [String: Any])?["counter"] as? Int == 1 && fields["color"] as? String == "blue")
        #expect((fields["tags"] as? [String: Any])?["set"] as? [String] == ["x"] && fields["notes"] as? String == "wip")
        #expect(shown["texts"] as? [String] == ["notes"])
        // A section's text is typed into as an item's: a splice by `section=`.
        let (typed, splice) = try await a.post("/api/docs/\(f.doc)/text", ["section": section, "name": "notes", "base": "wip",
                                                                            "at": "3", "delete": "0", "insert": "!"])
        #expect(typed == 200 && splice["text"] as? String == "wip!", "\(splice)")
        // An item's new counter at 0 as well; a step of 0 of a counter that exists is still refused.
        let item = try #require(watch.item("milk"))
        #expect(try await a.post("/api/docs/\(f.doc)/field", ["item": item, "name": "stock", "kind": "counter", "by": "0", "new": "1"]).0 == 200)
        #expect(await watch.waitForState { _ in (watch.fields(of: "milk")?["stock"] as? [String: Any])?["counter"] as? Int == 0 })
        let quiet = try f.operations()
        #expect(try await a.post("/api/docs/\(f.doc)/field", ["item": item, "name": "stock", "kind": "counter", "by": "0"]).0 == 400)
        // An unknown section: 409, nothing written.
        let (status, answer) = try await a.post("/api/docs/\(f.doc)/field", ["section": "99-99", "name": "x", "kind": "string", "value": "y"])
        #expect(status == 409, "\(answer)")
        #expect(try f.operations() == quiet)
        #expect(quiet == before + 1 + 6 + 1 + 1, "the insert, six field edits of the section, a splice, the item's new counter")
    }
}
#endif
