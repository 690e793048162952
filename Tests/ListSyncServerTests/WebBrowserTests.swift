#if canImport(Glibc)
import Foundation
import ListSyncTestTraits
import Testing

/// Whether the browser tests run: always on CI (a missing browser then fails them), and
/// wherever chromium and chromedriver are installed.
let browserTestsEnabled = ProcessInfo.processInfo.environment["CI"] == "true" || ChromeDriver.available

/// A daemon with its web view, a list "groceries" (Food: milk, eggs, bread; Other: soap), and
/// chromedriver (unless made with `browser: false`); everything stopped by ``close()``.
final class WebFixture {
    let dir = TemporaryFolder()
    let daemon: DaemonProcess
    let webPort: UInt16
    let driver: ChromeDriver?
    let doc: String
    private var profiles = 0

    init(browser: Bool = true) throws {
        let daemon = try DaemonProcess(data: dir.path + "/data", extra: ["--web", "127.0.0.1:0"])
        self.daemon = daemon
        guard let r = daemon.log.range(of: "web view:    http://127.0.0.1:") else {
            daemon.terminate()
            throw DaemonTestError("the daemon printed no web view address: \(daemon.log)")
        }
        webPort = UInt16(daemon.log[r.upperBound...].prefix { $0.isNumber }) ?? 0
        func cli(_ args: [String]) throws -> Any {
            let (code, out, err) = try daemon.run(args, json: true)
            guard code == 0 else { throw DaemonTestError("listsync \(args) exited \(code): \(err) \(out)") }
            return try JSONSerialization.jsonObject(with: Data(out.utf8))
        }
        do {
            guard let made = try cli(["create", "groceries", "--sections", "Food,Other"]) as? [String: Any],
                  let id = made["id"] as? String else { throw DaemonTestError("create printed no id") }
            for (path, text) in [("0.0", "milk"), ("0.1", "eggs"), ("0.2", "bread"), ("1.0", "soap")] { _ = try cli(["insert", id, path, text]) }
            doc = id
            driver = browser ? try ChromeDriver() : nil
        } catch {
            daemon.terminate()
            throw error
        }
    }

    /// Runs a client command with the daemon's key; throws unless it exits 0.
    @discardableResult
    func cli(_ args: [String]) throws -> String {
        let (code, out, err) = try daemon.run(args)
        guard code == 0 else { throw DaemonTestError("listsync \(args) exited \(code): \(err) \(out)") }
        return out
    }

    /// A one-time login link from `listsync open`.
    func loginURL(_ extra: [String] = []) throws -> String {
        let out = try cli(["open", doc, "--no-browser", "--web", "127.0.0.1:\(webPort)"] + extra)
        guard let line = out.split(separator: "\n").last(where: { $0.contains("/login?t=") }) else { throw DaemonTestError("no link in \(out)") }
        return line.trimmingCharacters(in: .whitespaces)
    }

    /// A new browser signed in with a fresh link, showing the list.
    func signedInBrowser() throws -> Browser {
        let b = try newBrowser()
        try b.navigate(try loginURL())
        #expect(try b.wait(until: "return document.querySelectorAll('li.row').length >= 4"), "the list did not show: \(String(describing: try? b.run("return document.body.innerText") ?? ""))")
        return b
    }

    func newBrowser() throws -> Browser {
        profiles += 1
        guard let driver else { throw DaemonTestError("a fixture made without a browser") }
        return try driver.browser(profile: dir.path + "/profile-\(profiles)")
    }

    /// The list as `listsync show` prints it.
    func table() throws -> [[String]] { try ListSyncServerTests.table(daemon, doc) }

    /// The document's operation count on the daemon (`docs --json`; it is resident while a page watches it).
    func operations() throws -> Int {
        let list = try daemon.json(["docs"]) as? [[String: Any]] ?? []
        return list.first { $0["id"] as? String == doc }?["operations"] as? Int ?? -1
    }

    func close() {
        driver?.stop()
        daemon.terminate()
        dir.remove()
    }
}

/// Pointer steps that press on the row showing `from` and hover over the lower half of the row
/// showing `onto` (so the drop lands right below it), without releasing.
func pressAndHover(_ b: Browser, from: String, onto: String, above: Bool = false) throws -> [[String: Any]] {
    let source = try b.element("li.row[data-text=\"\(from)\"]")
    let target = try b.element("li.row[data-text=\"\(onto)\"]")
    return [
        ["type": "pointerMove", "duration": 0, "origin": source, "x": 0, "y": 0],
        ["type": "pointerDown", "button": 0],
        ["type": "pointerMove", "duration": 100, "origin": "pointer", "x": 0, "y": 6],
        ["type": "pointerMove", "duration": 150, "origin": "pointer", "x": 4, "y": 20],
        ["type": "pointerMove", "duration": 250, "origin": target, "x": 0, "y": above ? -8 : 8],
        ["type": "pause", "duration": 150],
    ]
}

@Suite("The web view in headless Chromium (real pointer and key events)", .ownThread, .serialized, .hangGuard,
       .enabled(if: browserTestsEnabled, "chromium and chromedriver are not installed (.ci/run installs them)"))
struct WebBrowserTests {
    @Test("a CLI insert appears in the page by itself; a drag with real pointer events changes nothing until the drop, then is one move in the daemon's history, which the CLI shows")
    func liveInsertAndDrag() throws {
        let f = try WebFixture()
        defer { f.close() }
        let page = try f.signedInBrowser()
        #expect(try page.rows() == [["milk", "eggs", "bread"], ["soap"]])

        // A CLI insert: acknowledged when the process exits; drawn in the page (Date.now()) at `seen`.
        let started = Date().timeIntervalSince1970 * 1000
        try f.cli(["insert", f.doc, "0.3", "butter"])
        let acked = Date().timeIntervalSince1970 * 1000
        #expect(try page.wait(until: "return 'butter' in window.listsync.seen"))
        let seen = try #require(try page.run("return window.listsync.seen['butter']") as? Double)
        print("web view: CLI insert drawn \(Int(seen - started)) ms after the CLI process started, \(Int(seen - acked)) ms after it exited acknowledged")
        // Drawn after it was made (how soon, within a second alone, is the machine's load as much
        // as the page's: printed, not a verdict; the wait above is the liveness guard).
        #expect(seen >= started, "drawn at \(seen), before the insert started at \(started)")

        let before = try f.operations()
        // `watch --count 1` sees exactly the changes the drag makes, as another device would.
        let watch = Process()
        watch.executableURL = URL(fileURLWithPath: try #require(listsyncBinary()))
        watch.arguments = ["watch", f.doc, "--count", "1", "--daemon", f.daemon.address, "--key-file", f.daemon.keyFile, "--data", f.daemon.data]
        let watched = OutputBuffer(), pipe = Pipe()
        watch.standardOutput = pipe
        watch.standardError = pipe
        PipeDrain.start(pipe) { watched.append($0) }
        try watch.run()
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) }; watch.waitUntilExit() }
        #expect(eventually(30) { watched.text.contains("watching") })

        // Press on milk and hover below soap: the list does not change while the pointer is down.
        try page.perform([Browser.mouse(try pressAndHover(page, from: "milk", onto: "soap"))])
        #expect(try page.wait(10, until: "return document.querySelectorAll('li.row.lifted').length === 1"), "the row is lifted while the pointer is down")
        Thread.sleep(forTimeInterval: 0.3)
        #expect(try page.rows() == [["milk", "eggs", "bread", "butter"], ["soap"]])
        #expect(try f.table() == [["milk", "eggs", "bread", "butter"], ["soap"]])
        #expect(try f.operations() == before)
        try page.perform([Browser.mouse([["type": "pointerUp", "button": 0]])])

        let after = [["eggs", "bread", "butter"], ["soap", "milk"]]
        #expect(try page.wait(until: "return JSON.stringify([...document.querySelectorAll('ul.rows')].map(u => [...u.querySelectorAll('li.row .text')].map(t => t.textContent))) === arguments[0]",
                              [String(decoding: try JSONSerialization.data(withJSONObject: after), as: UTF8.self)]),
                "the page shows \(String(describing: try? page.rows()))")
        #expect(try f.table() == after)
        #expect(try f.operations() == before + 1, "one move operation")
        #expect(eventually(30) { !watch.isRunning })
        let lines = watched.text.split(separator: "\n").filter { $0.hasPrefix("moved") || $0.hasPrefix("inserted") || $0.hasPrefix("deleted") }
        #expect(lines == ["moved 0.0 → 1.1 \"milk\""], "\(watched.text)")
        #expect(try page.run("return window.listsync.moves") as? Int == 1)

        // Renames and deletes from the CLI appear too.
        try f.cli(["rename", f.doc, "0.0", "brown eggs"])
        #expect(try page.wait(until: "return !!document.querySelector('li.row[data-text=\"brown eggs\"]') && !document.querySelector('li.row[data-text=\"eggs\"]')"))
        try f.cli(["delete", f.doc, "1.0"])
        #expect(try page.wait(until: "return !document.querySelector('li.row[data-text=\"soap\"]')"))
        #expect(try page.rows() == [["brown eggs", "bread", "butter"], ["milk"]])
    }

    @Test("two pages drag the same row at once: each sees the other's drag, and both end showing one list, the row once")
    func twoPagesDragTheSameRow() throws {
        let f = try WebFixture()
        defer { f.close() }
        let a = try f.signedInBrowser(), b = try f.signedInBrowser()
        try a.perform([Browser.mouse(try pressAndHover(a, from: "eggs", onto: "soap"))])
        try b.perform([Browser.mouse(try pressAndHover(b, from: "eggs", onto: "milk", above: true))])
        // Presence: each page marks the row the other drags.
        #expect(try a.wait(until: "const w = document.querySelector('li.row.remote .who'); return !!w && w.textContent.includes('is moving this')"))
        #expect(try b.wait(until: "return !!document.querySelector('li.row.remote')"))
        try a.perform([Browser.mouse([["type": "pointerUp", "button": 0]])])
        try b.perform([Browser.mouse([["type": "pointerUp", "button": 0]])])

        var final: [[String]] = []
        let settled = eventually(30) {
            guard let t = try? f.table(), let ra = try? a.rows(), let rb = try? b.rows() else { return false }
            final = t
            return ra == t && rb == t && t.flatMap { $0 }.filter { $0 == "eggs" }.count == 1
        }
        #expect(settled, "daemon \(final), a \(String(describing: try? a.rows())), b \(String(describing: try? b.rows()))")
        #expect(final.flatMap { $0 }.sorted() == ["bread", "eggs", "milk", "soap"])
        #expect(final == [["eggs", "milk", "bread"], ["soap"]] || final == [["milk", "bread"], ["soap", "eggs"]], "\(final)")
        // The drags ended: nobody is shown moving anything.
        #expect(try a.wait(until: "return !document.querySelector('li.row.remote')"))
    }

    @Test("no valid session, nothing: a page, its events and a used or altered link are refused; a device's page keeps to its documents and stops updating once revoked")
    func sessionsAndRevocation() throws {
        let f = try WebFixture()
        defer { f.close() }
        let web = "http://127.0.0.1:\(f.webPort)"
        let stranger = try f.newBrowser()
        try stranger.navigate("\(web)/doc/\(f.doc)")
        #expect(try stranger.wait(until: "return !!document.getElementById('signed-out')"))
        #expect(try stranger.run("return document.querySelectorAll('li.row').length") as? Int == 0)
        let statuses = try stranger.run("""
            return Promise.all(['/api/docs', '/api/docs/' + arguments[0] + '/events', '/api/status'].map(u => fetch(u).then(r => r.status)));
            """, [f.doc]) as? [Int]
        #expect(statuses == [401, 401, 401])
        #expect(try stranger.run("return document.body.innerText.includes('milk')") as? Bool == false)

        let link = try f.loginURL()
        try stranger.navigate(link)
        #expect(try stranger.wait(until: "return document.querySelectorAll('li.row').length === 4"))
        let other = try f.newBrowser()
        try other.navigate(link)   // the same link again: used
        #expect(try other.wait(until: "const p = document.getElementById('problem'); return !!p && p.textContent.includes('used already')"))
        var altered = try f.loginURL()
        altered = String(altered.dropLast()) + (altered.hasSuffix("0") ? "1" : "0")
        try other.navigate(altered)
        #expect(try other.wait(until: "const p = document.getElementById('problem'); return !!p && p.textContent.includes('not made with this daemon')"))
        // A state-changing request without the page's CSRF token is refused.
        let csrf = try stranger.run("return fetch('/api/docs?name=forged', {method: 'POST'}).then(r => r.status)") as? Int
        #expect(csrf == 403)
        let renameCSRF = try stranger.run("return fetch('/api/docs/' + arguments[0] + '/rename?name=forged', {method: 'POST'}).then(r => r.status)", [f.doc]) as? Int
        #expect(renameCSRF == 403)

        // A device scoped to this list.
        guard let made = try f.daemon.json(["create", "secret"]) as? [String: Any], let secret = made["id"] as? String else {
            throw DaemonTestError("no second list")
        }
        let credential = f.dir.path + "/phone.credential"
        let added = try runListsync(["device", "add", "phone", "--docs", f.doc, "--out", credential, "--data", f.daemon.data])
        try #require(added.0 == 0, "\(added.2)")
        let (code, out, err) = try runListsync(["open", f.doc, "--no-browser", "--web", "127.0.0.1:\(f.webPort)", "--credential", credential,
                                                "--daemon", f.daemon.address, "--data", f.daemon.data])
        try #require(code == 0, "\(err)")
        let phoneLink = try #require(out.split(separator: "\n").last { $0.contains("/login?t=") }).trimmingCharacters(in: .whitespaces)
        let phone = try f.newBrowser()
        try phone.navigate(phoneLink)
        #expect(try phone.wait(until: "return document.querySelectorAll('li.row').length === 4"))
        let docs = try phone.run("return fetch('/api/docs').then(r => r.json()).then(j => j.documents.map(d => d.id))") as? [String]
        #expect(docs == [f.doc], "a device sees only its documents")
        #expect(try phone.run("return fetch('/doc/' + arguments[0]).then(r => r.status)", [secret]) as? Int == 404)
        #expect(try phone.run("return fetch('/api/docs/' + arguments[0] + '/events').then(r => r.status)", [secret]) as? Int == 404)
        // Renaming a list out of the device's scope, with the page's own token: no such document.
        let renameSecret = "return fetch('/api/docs/' + arguments[0] + '/rename?name=x', {method: 'POST', headers: {'X-ListSync-CSRF': document.querySelector('meta[name=csrf]').content}}).then(r => r.status)"
        #expect(try phone.run(renameSecret, [secret]) as? Int == 404)
        #expect(try (f.daemon.json(["docs"]) as? [[String: Any]] ?? []).contains { $0["id"] as? String == secret && $0["name"] as? String == "secret" })

        try f.cli(["insert", f.doc, "0.0", "before-revoke"])
        #expect(try phone.wait(until: "return 'before-revoke' in window.listsync.seen"))
        let revoked = try runListsync(["device", "revoke", "phone", "--data", f.daemon.data])
        try #require(revoked.0 == 0, "\(revoked.2)")
        #expect(try phone.wait(until: "return window.listsync.ended !== null"), "the page was not told its session ended")
        try f.cli(["insert", f.doc, "0.0", "after-revoke"])
        #expect(try stranger.wait(until: "return 'after-revoke' in window.listsync.seen"), "the operator's page still updates")
        Thread.sleep(forTimeInterval: 1.0)
        #expect(try phone.run("return 'after-revoke' in window.listsync.seen") as? Bool == false)
        #expect(try phone.run("return fetch('/api/docs').then(r => r.status)") as? Int == 401)
    }

    @Test("keyboard reordering: Alt+ArrowDown and Alt+ArrowUp move the focused row by one place, one move each, across sections too")
    func keyboardReordering() throws {
        let f = try WebFixture()
        defer { f.close() }
        let page = try f.signedInBrowser()
        let before = try f.operations()
        try page.run("document.querySelector('li.row[data-text=\"bread\"]').focus()")
        let altDown: [[String: Any]] = [["type": "keyDown", "value": "\u{E00A}"], ["type": "keyDown", "value": "\u{E015}"],
                                        ["type": "keyUp", "value": "\u{E015}"], ["type": "keyUp", "value": "\u{E00A}"]]
        try page.perform([Browser.keys(altDown)])
        #expect(eventually(30) { (try? f.table()) == [["milk", "eggs"], ["bread", "soap"]] }, "\(String(describing: try? f.table()))")
        #expect(try page.wait(until: "return document.querySelector('ul.rows[data-section]:nth-of-type(1)') !== null && [...document.querySelectorAll('ul.rows')][1].querySelector('li.row .text').textContent === 'bread'"))
        #expect(try page.run("return document.activeElement && document.activeElement.dataset.text") as? String == "bread", "the moved row keeps the focus")
        let altUp: [[String: Any]] = [["type": "keyDown", "value": "\u{E00A}"], ["type": "keyDown", "value": "\u{E013}"],
                                      ["type": "keyUp", "value": "\u{E013}"], ["type": "keyUp", "value": "\u{E00A}"]]
        try page.perform([Browser.keys(altUp)])
        #expect(eventually(30) { (try? f.table()) == [["milk", "eggs", "bread"], ["soap"]] })
        try page.perform([Browser.keys(altUp)])
        #expect(eventually(30) { (try? f.table()) == [["milk", "bread", "eggs"], ["soap"]] })
        #expect(try f.operations() == before + 3, "one move per key press")
        #expect(try page.wait(until: "return [...document.querySelectorAll('li.row .text')].map(t => t.textContent).join() === 'milk,bread,eggs,soap'"))
    }

    @Test("the documents and status pages: the list with sizes, create, rename and delete from the page; the status figures and chart (screenshots with LISTSYNC_WEB_SCREENSHOTS=DIR)")
    func documentsAndStatus() throws {
        let f = try WebFixture()
        defer { f.close() }
        let shots = ProcessInfo.processInfo.environment["LISTSYNC_WEB_SCREENSHOTS"]
        let page = try f.signedInBrowser()
        let web = "http://127.0.0.1:\(f.webPort)"
        if let shots {
            try f.cli(["insert", f.doc, "1.1", "dish soap"])
            _ = try page.wait(until: "return 'dish soap' in window.listsync.seen")
            // Another page drags eggs: this one shows it (presence); then that drag is cancelled (Escape).
            let other = try f.signedInBrowser()
            try other.perform([Browser.mouse(try pressAndHover(other, from: "eggs", onto: "soap"))])
            _ = try page.wait(until: "return !!document.querySelector('li.row.remote')")
            try page.screenshot().write(to: URL(fileURLWithPath: shots + "/web-list.png"))
            try other.screenshot().write(to: URL(fileURLWithPath: shots + "/web-drag.png"))
            try other.perform([Browser.keys([["type": "keyDown", "value": "\u{E00C}"], ["type": "keyUp", "value": "\u{E00C}"]]),
                               Browser.mouse([["type": "pointerUp", "button": 0]])])
            #expect(try f.table() == [["milk", "eggs", "bread"], ["soap", "dish soap"]], "a cancelled drag moves nothing")
        }
        try page.navigate(web + "/")
        #expect(try page.wait(until: "return !!document.querySelector('tr[data-doc=\"' + arguments[0] + '\"]')", [f.doc]))
        let figures = try page.run("return [...document.querySelectorAll('tr[data-doc=\"' + arguments[0] + '\"] td.num')].map(t => t.textContent)", [f.doc]) as? [String]
        #expect(figures?.first == String(try f.operations()), "the operations of a loaded document: \(figures ?? [])")
        #expect(figures?.last?.hasSuffix("B") == true, "\(figures ?? [])")
        try page.run("document.getElementById('new-name').value = 'chores'")
        let create = try page.element("#create")
        try page.perform([Browser.mouse([["type": "pointerMove", "duration": 0, "origin": create, "x": 0, "y": 0],
                                         ["type": "pointerDown", "button": 0], ["type": "pointerUp", "button": 0]])])
        #expect(try page.wait(until: "return location.pathname.startsWith('/doc/') && document.getElementById('title').textContent === 'chores'"))
        #expect(try (f.daemon.json(["docs"]) as? [[String: Any]] ?? []).contains { $0["name"] as? String == "chores" })
        if let shots {
            try page.navigate(web + "/")
            _ = try page.wait(until: "return document.querySelectorAll('tr[data-doc]').length === 2")
            try page.screenshot().write(to: URL(fileURLWithPath: shots + "/web-documents.png"))
        }

        // Delete from the page: two clicks (the second confirms); gone from the daemon.
        let chores = try #require((f.daemon.json(["docs"]) as? [[String: Any]] ?? []).first { $0["name"] as? String == "chores" }?["id"] as? String)
        // Rename from the page: the button opens a field in the name's cell; Save (Enter) renames
        // it on the daemon, the row shows the new name and the CLI lists it.
        try page.navigate(web + "/")
        #expect(try page.wait(until: "return !!document.querySelector('tr[data-doc=\"' + arguments[0] + '\"] button.rename')", [chores]))
        let rename = try page.element("tr[data-doc=\"\(chores)\"] button.rename")
        try page.perform([Browser.mouse([["type": "pointerMove", "duration": 0, "origin": rename, "x": 0, "y": 0],
                                         ["type": "pointerDown", "button": 0], ["type": "pointerUp", "button": 0]])])
        #expect(try page.wait(until: "return document.activeElement && document.activeElement.classList.contains('rename-name')"))
        // Typed as keys: select-all is on (the old name is replaced).
        let typing: [[String: Any]] = "weekend chores\u{E007}".unicodeScalars.flatMap { k -> [[String: Any]] in
            [["type": "keyDown", "value": String(k)], ["type": "keyUp", "value": String(k)]]
        }
        try page.perform([Browser.keys(typing)])
        #expect(try page.wait(until: "return (document.querySelector('tr[data-doc=\"' + arguments[0] + '\"] td a') || {}).textContent === 'weekend chores'", [chores]),
                "\(String(describing: try? page.run("return window.listsync.errors") ?? ""))")
        let listed = try f.daemon.json(["docs"]) as? [[String: Any]] ?? []
        #expect(listed.first { $0["id"] as? String == chores }?["name"] as? String == "weekend chores", "\(listed)")
        #expect(try f.cli(["docs"]).contains("weekend chores"))

        #expect(try page.wait(until: "return !!document.querySelector('tr[data-doc=\"' + arguments[0] + '\"] button.danger')", [chores]))
        let delete = try page.element("tr[data-doc=\"\(chores)\"] button.danger")
        let click: [[String: Any]] = [["type": "pointerMove", "duration": 0, "origin": delete, "x": 0, "y": 0],
                                      ["type": "pointerDown", "button": 0], ["type": "pointerUp", "button": 0]]
        try page.perform([Browser.mouse(click)])
        #expect(try page.run("return document.querySelector('tr[data-doc=\"' + arguments[0] + '\"] button.danger').textContent", [chores]) as? String == "Confirm delete")
        try page.perform([Browser.mouse(click)])
        #expect(try page.wait(until: "return !document.querySelector('tr[data-doc=\"' + arguments[0] + '\"]')", [chores]))
        #expect(try !(f.daemon.json(["docs"]) as? [[String: Any]] ?? []).contains { $0["id"] as? String == chores })

        try page.navigate(web + "/status")
        #expect(try page.wait(until: "return document.querySelectorAll('dl.figures dd').length > 5"))
        let connections = try page.run("return Number(document.querySelector('dl.figures dd').textContent)") as? Int
        #expect((connections ?? 0) >= 1, "the page's own session is a connection")
        if let shots {
            for i in 0..<24 { try f.cli(["insert", f.doc, "0.0", "item \(i)"]); if i % 3 == 0 { Thread.sleep(forTimeInterval: 0.5) } }
            Thread.sleep(forTimeInterval: 1.5)
            try page.screenshot().write(to: URL(fileURLWithPath: shots + "/web-status.png"))
        }
    }
}
#endif

#if canImport(Glibc)
import ListSyncTestSupport

@Suite("The web view over plain HTTP (no browser)", .ownThread, .serialized, .hangGuard)
struct WebHTTPTests {
    /// The status line of the answer to `request` on 127.0.0.1:`port`.
    static func statusLine(_ request: String, port: UInt16) async throws -> String {
        let raw = try #require(RawSocket(port: port, source: "127.0.0.1"))
        raw.send(Array(request.utf8))
        var got: [UInt8] = []
        while !got.contains(10) {
            let more = await raw.readSome(timeout: livenessGuardSeconds)
            if more.isEmpty { break }
            got += more
        }
        return String(decoding: got.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
    }

    @Test("listsync open without a web view says how to start one; another Host (DNS rebinding) gets 421; the script and style need no session, the pages do")
    func openAndHosts() async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let plain = try DaemonProcess(data: dir.path + "/plain")
        let (code, _, err) = try plain.run(["open", "--no-browser"])
        plain.terminate()
        #expect(code != 0 && err.contains("serve --web"), "\(err)")

        let d = try DaemonProcess(data: dir.path + "/web", extra: ["--web", "0"])
        defer { if d.process.isRunning { d.terminate() } }
        let r = try #require(d.log.range(of: "web view:    http://127.0.0.1:"))
        let port = try #require(UInt16(d.log[r.upperBound...].prefix { $0.isNumber }))
        #expect(FileManager.default.fileExists(atPath: d.data + "/web-address"))
        #expect(try await Self.statusLine("GET / HTTP/1.1\r\nHost: evil.example:\(port)\r\n\r\n", port: port) == "HTTP/1.1 421 Misdirected Request")
        #expect(try await Self.statusLine("GET /app.js HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n", port: port) == "HTTP/1.1 200 OK")
        #expect(try await Self.statusLine("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n", port: port) == "HTTP/1.1 401 Unauthorized")
        #expect(try await Self.statusLine("POST /api/docs?name=x HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nCookie: listsync_session=forged\r\n\r\n", port: port)
                == "HTTP/1.1 401 Unauthorized")
        #expect(try await Self.statusLine("GET /login?t=1.-.00 HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n", port: port) == "HTTP/1.1 403 Forbidden")
        // Stopped, the daemon removes the address file.
        #expect(d.terminate() == 0)
        #expect(!FileManager.default.fileExists(atPath: d.data + "/web-address"))
    }
}
#endif
