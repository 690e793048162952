#if canImport(Glibc)
import Foundation
import ListSyncTestTraits
import Testing

@Suite("The web view's fields in headless Chromium", .ownThread, .serialized, .hangGuard,
       .enabled(if: browserTestsEnabled, "chromium and chromedriver are not installed (.ci/run installs them)"))
struct WebFieldBrowserTests {
    /// The text of the field chip `name` of the row showing `row`, or nil.
    static let chip = "const c = document.querySelector('li.row[data-text=\"' + arguments[0] + '\"] .field[data-name=\"' + arguments[1] + '\"]'); return c ? c.textContent : null"

    @Test("fields set with the CLI show on the row; a value field edited in place is one field write on the daemon; another's field edit shows live; a field edit without the CSRF header is refused")
    func fieldsShownEditedAndLive() throws {
        let f = try WebFixture()
        defer { f.close() }
        try f.cli(["set", f.doc, "0.0", "title=milk", "qty=2", "done=false", "--add", "tags=dairy"])
        let page = try f.signedInBrowser()
        #expect(try page.wait(until: "return (() => { \(Self.chip) })() === 'title: milk'", ["milk", "title"]))
        #expect(try page.run(Self.chip, ["milk", "title"]) as? String == "title: milk")
        #expect(try page.run(Self.chip, ["milk", "tags"]) as? String == "tags: {dairy}")

        // Edited in place: the chip becomes a form; saving writes the one field.
        let before = try f.operations()
        let edit = """
            document.querySelector('li.row[data-text="milk"] .field[data-name="' + arguments[0] + '"]').click();
            const form = document.querySelector('li.row[data-text="milk"] form.field-edit');
            form.querySelector('input').value = arguments[1];
            form.requestSubmit();
            """
        try page.run(edit, ["title", "oat milk"])
        #expect(eventually(30) { (try? FieldProcessTests.daemonFields(f.daemon, f.doc))?["title"] as? String == "oat milk" })
        try page.run(edit, ["qty", "5"])
        #expect(eventually(30) { (try? FieldProcessTests.daemonFields(f.daemon, f.doc))?["qty"] as? Int == 5 })
        #expect(try f.operations() == before + 2, "one operation per field edit")
        let fields = try FieldProcessTests.daemonFields(f.daemon, f.doc)
        #expect(fields["done"] as? Bool == false && (fields["tags"] as? [String: Any])?["set"] as? [String] == ["dairy"], "\(fields)")

        // A number field given text that is not a number: refused, nothing written.
        try page.run(edit, ["qty", "many"])
        #expect(try page.wait(until: "return window.listsync.errors.some(e => e.includes('not a value of kind number'))"))
        #expect(try f.operations() == before + 2)

        // Someone else's field edit shows live.
        try f.cli(["set", f.doc, "0.0", "done=true"])
        #expect(try page.wait(until: "return (() => { \(Self.chip) })() === 'done: true'", ["milk", "done"]),
                "\(String(describing: try? page.run("return JSON.stringify([window.listsync.errors, document.querySelector('li.row').outerHTML])")))")

        // Without the CSRF header: refused.
        let item = try #require(try page.run("return document.querySelector('li.row[data-text=\"milk\"]').dataset.item") as? String)
        let status = try page.run("return fetch('/api/docs/' + arguments[0] + '/field?item=' + arguments[1] + '&name=title&kind=string&value=x', {method: 'POST'}).then(r => r.status)", [f.doc, item]) as? Int
        #expect(status == 403)
        #expect((try FieldProcessTests.daemonFields(f.daemon, f.doc))["title"] as? String == "oat milk")
    }

    @Test("a section's fields show beside its title and are edited in place as a row's; '+ field' of kind counter with no value adds a counter at 0, and its + adds 1; another page shows each live")
    func sectionFieldsFromThePage() throws {
        let f = try WebFixture()
        defer { f.close() }
        try f.cli(["set", f.doc, "0", "color=green"])
        let a = try f.signedInBrowser(), b = try f.signedInBrowser()
        let head = "document.querySelector('.section-head[data-section=\"' + arguments[0] + '\"]')"
        let chip = "const c = \(head).querySelector('.field[data-name=\"' + arguments[1] + '\"]'); return c ? c.textContent : null"
        let section = try #require(try a.run("return document.querySelector('.section-head').dataset.section") as? String)
        for page in [a, b] { #expect(try page.wait(until: "return (() => { \(chip) })() === 'color: green'", [section, "color"])) }
        func daemonSectionFields() throws -> [String: Any] {
            let o = try JSONSerialization.jsonObject(with: Data(try f.cli(["show", f.doc, "--json"]).utf8)) as? [String: Any]
            return ((o?["sections"] as? [[String: Any]])?.first?["fields"] as? [String: Any]) ?? [:]
        }
        let before = try f.operations()
        // Edited in place: the chip becomes a form; saving writes the one field.
        try a.run("""
            \(head).querySelector('.field[data-name="color"]').click();
            const form = \(head).querySelector('form.field-edit');
            form.querySelector('input').value = 'blue';
            form.requestSubmit();
            """, [section])
        #expect(eventually(30) { (try? daemonSectionFields())?["color"] as? String == "blue" })
        #expect(try b.wait(until: "return (() => { \(chip) })() === 'color: blue'", [section, "color"]))
        // "+ field": a counter with no value starts at 0; its + adds 1.
        try a.run("\(head).querySelector('.field-add').click();", [section])
        try a.run("""
            const form = \(head).querySelector('form.field-new');
            form.querySelector('.field-new-name').value = 'wip';
            form.querySelector('.field-new-kind').value = 'counter';
            form.requestSubmit();
            """, [section])
        #expect(try b.wait(until: "return (() => { \(chip) })() === 'wip: 0'", [section, "wip"]),
                "\(String(describing: try? a.run("return JSON.stringify(window.listsync.errors)")))")
        #expect(try a.wait(until: "return \(head).querySelector('.field-step[data-name=\"wip\"][data-by=\"1\"]') !== null", [section]))
        try a.run("\(head).querySelector('.field-step[data-name=\"wip\"][data-by=\"1\"]').click();", [section])
        #expect(try b.wait(until: "return (() => { \(chip) })() === 'wip: 1'", [section, "wip"]))
        #expect((try daemonSectionFields()["wip"] as? [String: Any])?["counter"] as? Int == 1)
        #expect(try f.operations() == before + 3, "the value, the new counter, its step")
    }

    @Test("a section's text field typed on one page: the other page, editing it too, draws that person's caret, and the section's head says who is typing")
    func sectionCaretDrawn() throws {
        let f = try WebFixture()
        defer { f.close() }
        try f.cli(["text", f.doc, "0", "notes", "--at", "0", "--insert", "weekly"])
        let a = try f.signedInBrowser(), b = try f.signedInBrowser()
        let head = "document.querySelector('.section-head[data-section=\"' + arguments[0] + '\"]')"
        let section = try #require(try a.run("return document.querySelector('.section-head').dataset.section") as? String)
        let area = "\(head).querySelector('textarea.field-text')"
        for page in [a, b] {
            #expect(try page.wait(until: "const c = \(head).querySelector('.field[data-name=\"notes\"]'); return c !== null", [section]))
            try page.run("\(head).querySelector('.field[data-name=\"notes\"]').click();", [section])
            #expect(try page.wait(until: "return \(area) !== null", [section]))
        }
        // a puts its caret after "week"; b, editing the same field, draws it there.
        try a.run("const t = \(area); t.focus(); t.setSelectionRange(4, 4); t.dispatchEvent(new Event('select'));", [section])
        #expect(try b.wait(until: "const c = document.querySelector('.remote-caret'); return c !== null && c.dataset.head === '4'"),
                "\(String(describing: try? b.run("return [document.querySelector('.carets')?.outerHTML, JSON.stringify(window.listsync.errors)]")))")
        #expect(try b.wait(until: "return (\(head).title || '').includes('is typing in notes')", [section]))
        for page in [a, b] { #expect((try page.run("return window.listsync.errors") as? [Any])?.isEmpty == true) }
    }

    @Test("a counter and a set edited in place write only the change: an increment, set adds and removes; what others did meanwhile is kept; a text set through the field API is a splice, refused when the text changed meanwhile")
    func countersSetsAndTextEditedInPlace() throws {
        let f = try WebFixture()
        defer { f.close() }
        try f.cli(["set", f.doc, "0.0", "--increment", "votes=2", "--add", "tags=dairy"])
        try f.cli(["text", f.doc, "0.0", "notes", "--at", "0", "--insert", "buy two"])
        let page = try f.signedInBrowser()
        #expect(try page.wait(until: "return (() => { \(Self.chip) })() === 'notes: buy two'", ["milk", "notes"]))
        #expect(try page.run(Self.chip, ["milk", "votes"]) as? String == "votes: 2")
        // Opens the chip's form; then sets its input and saves.
        let open = "document.querySelector('li.row[data-text=\"milk\"] .field[data-name=\"' + arguments[0] + '\"]').click();"
        let save = """
            const form = document.querySelector('li.row[data-text="milk"] form.field-edit');
            form.querySelector('input').value = arguments[0];
            form.requestSubmit();
            """
        let before = try f.operations()

        // The counter: 2 shown; someone adds 10 while the form is open; saving 5 adds 3.
        try page.run(open, ["votes"])
        try f.cli(["set", f.doc, "0.0", "--increment", "votes=10"])
        try page.run(save, ["5"])
        #expect(eventually(30) { ((try? FieldProcessTests.daemonFields(f.daemon, f.doc))?["votes"] as? [String: Any])?["counter"] as? Int == 15 },
                "\(String(describing: try? FieldProcessTests.daemonFields(f.daemon, f.doc)))")

        // The set: {dairy} shown; someone adds "organic" meanwhile; saving "cold, dairy" adds "cold" only.
        try page.run(open, ["tags"])
        try f.cli(["set", f.doc, "0.0", "--add", "tags=organic"])
        try page.run(save, ["cold, dairy"])
        #expect(eventually(30) { ((try? FieldProcessTests.daemonFields(f.daemon, f.doc))?["tags"] as? [String: Any])?["set"] as? [String] == ["cold", "dairy", "organic"] })
        // Removing a member from the page: only that one.
        try page.run(open, ["tags"])
        try page.run(save, ["cold, organic"])
        #expect(eventually(30) { ((try? FieldProcessTests.daemonFields(f.daemon, f.doc))?["tags"] as? [String: Any])?["set"] as? [String] == ["cold", "organic"] })

        // The text through the field API (the page itself types live: twoPagesTypeTogether): a
        // splice, and the field stays text (merged by character, Docs/Semantics.md §8.5).
        let item = try #require(try page.run("return document.querySelector('li.row[data-text=\"milk\"]').dataset.item") as? String)
        let setText = """
            return fetch('/api/docs/' + arguments[0] + '/field?' + new URLSearchParams({item: arguments[1], name: 'notes', kind: 'text',
                value: arguments[2], was: arguments[3]}), {method: 'POST', headers: {'X-ListSync-CSRF': document.querySelector('meta[name=csrf]').content}}).then(r => r.status)
            """
        #expect(try page.run(setText, [f.doc, item, "buy two today", "buy two"]) as? Int == 200)
        #expect(eventually(30) { (try? f.cli(["show", f.doc]))?.contains("text(\"buy two today\")") == true },
                "\(String(describing: try? f.cli(["show", f.doc])))")
        #expect(try f.operations() == before + 2 + 3 + 1, "the CLI's two, the counter's increment, two set changes, one splice")

        // Text changed by someone else since the page read it: refused (409), nothing written.
        try f.cli(["text", f.doc, "0.0", "notes", "--at", "0", "--insert", "Please "])
        let afterOthers = try f.operations()
        #expect(try page.run(setText, [f.doc, item, "buy three today", "buy two today"]) as? Int == 409)
        #expect(try f.operations() == afterOthers)
        #expect(try f.cli(["show", f.doc]).contains("text(\"Please buy two today\")"))
    }

    @Test("from the page: a counter's + button, a set member added and one removed, a field added and one removed, one operation each; another page shows each live; dates and bytes read as a date and hex")
    func everyKindFromThePageShownLive() throws {
        let f = try WebFixture()
        defer { f.close() }
        try f.cli(["set", f.doc, "0.0", "title=milk", "--increment", "votes=2", "--add", "tags=dairy",
                   "when={\"date\":\"2026-11-29T10:00:00Z\"}", "blob={\"bytes\":\"aGVsbG8=\"}"])
        let a = try f.signedInBrowser(), b = try f.signedInBrowser()
        func shows(_ page: Browser, _ name: String, _ text: String) throws -> Bool {
            try page.wait(until: "return (() => { \(Self.chip) })() === arguments[2]", ["milk", name, text])
        }
        for page in [a, b] { #expect(try shows(page, "votes", "votes: 2")) }
        #expect(try a.run(Self.chip, ["milk", "when"]) as? String == "when: 2026-11-29 10:00 UTC")
        #expect(try a.run(Self.chip, ["milk", "blob"]) as? String == "blob: 5 bytes 68656c6c6f")
        let before = try f.operations()
        let row = "document.querySelector('li.row[data-text=\"milk\"]')"

        // The counter's + button on a, clicked with real pointer events (a press on a button
        // starts no drag): b shows 3.
        let plus = try a.element("li.row[data-text=\"milk\"] .field-step[data-name=\"votes\"][data-by=\"1\"]")
        try a.perform([Browser.mouse([["type": "pointerMove", "duration": 0, "origin": plus, "x": 0, "y": 0],
                                      ["type": "pointerDown", "button": 0], ["type": "pointerUp", "button": 0]])])
        #expect(try shows(b, "votes", "votes: 3"), "\(String(describing: try? b.run("return window.listsync.errors")))")
        #expect(try shows(a, "votes", "votes: 3"))

        // A set member added from a's set editor, then "dairy" removed alone: b shows each.
        try a.run("\(row).querySelector('.field[data-name=\"tags\"]').click();")
        try a.run("""
            const add = \(row).querySelector('form.member-add');
            add.querySelector('input').value = 'organic';
            add.requestSubmit();
            """)
        #expect(try shows(b, "tags", "tags: {dairy, organic}"), "\(String(describing: try? a.run("return window.listsync.errors")))")
        #expect(try shows(a, "tags", "tags: {dairy, organic}"))
        try a.run("\(row).querySelector('.field[data-name=\"tags\"]').click();")
        try a.run("\(row).querySelector('.member-remove[data-member=\"dairy\"]').click();")
        #expect(try shows(b, "tags", "tags: {organic}"))

        // A field added from the page (a counter starting at 4), and the title removed.
        try a.run("\(row).querySelector('.field-add').click();")
        try a.run("""
            const form = \(row).querySelector('form.field-new');
            form.querySelector('.field-new-name').value = 'stars';
            form.querySelector('.field-new-kind').value = 'counter';
            form.querySelector('.field-new-value').value = '4';
            form.requestSubmit();
            """)
        #expect(try shows(b, "stars", "stars: 4"), "\(String(describing: try? a.run("return window.listsync.errors")))")
        try a.run("\(row).querySelector('.field[data-name=\"title\"]').click();")
        try a.run("\(row).querySelector('form.field-edit .field-remove').click();")
        #expect(try b.wait(until: "return \(row).querySelector('.field[data-name=\"title\"]') === null && \(row).querySelector('.field[data-name=\"stars\"]') !== null"))
        #expect(try f.operations() == before + 5, "one operation per step, member, new field and removal")
        let fields = try FieldProcessTests.daemonFields(f.daemon, f.doc)
        #expect(fields["title"] == nil && (fields["votes"] as? [String: Any])?["counter"] as? Int == 3
                && (fields["stars"] as? [String: Any])?["counter"] as? Int == 4, "\(fields)")
        for page in [a, b] { #expect((try page.run("return window.listsync.errors") as? [Any])?.isEmpty == true) }
    }

    @Test("two pages type into one text field at once with real key events: both people's characters merge on the daemon and on both pages, one operation per keystroke; each page shows the other's caret; neither caret jumps")
    func twoPagesTypeTogether() throws {
        let f = try WebFixture()
        defer { f.close() }
        try f.cli(["text", f.doc, "0.0", "notes", "--at", "0", "--insert", "buy two"])
        let a = try f.signedInBrowser(), b = try f.signedInBrowser()
        let area = "document.querySelector('li.row[data-text=\"milk\"] textarea.field-text')"
        for page in [a, b] {
            #expect(try page.wait(until: "return (() => { \(Self.chip) })() === 'notes: buy two'", ["milk", "notes"]))
            try page.run("document.querySelector('li.row[data-text=\"milk\"] .field[data-name=\"notes\"]').click();")
            #expect(try page.wait(until: "return \(area) !== null"))
        }
        // a's caret at the end, b's at the start; then they type, keystroke for keystroke.
        try a.run("const t = \(area); t.focus(); t.setSelectionRange(t.value.length, t.value.length);")
        try b.run("const t = \(area); t.focus(); t.setSelectionRange(0, 0);")
        let before = try f.operations()
        let typedA = Array(" today"), typedB = Array("please ")
        func key(_ page: Browser, _ c: Character) throws {
            try page.perform([Browser.keys([["type": "keyDown", "value": String(c)], ["type": "keyUp", "value": String(c)]])])
        }
        for k in 0 ..< max(typedA.count, typedB.count) {
            if k < typedA.count { try key(a, typedA[k]) }
            if k < typedB.count { try key(b, typedB[k]) }
        }
        let merged = "please buy two today"
        #expect(eventually(30) { (try? f.cli(["show", f.doc]))?.contains("text(\"\(merged)\")") == true },
                "\(String(describing: try? f.cli(["show", f.doc])))")
        for page in [a, b] {
            #expect(try page.wait(until: "return \(area).value === arguments[0]", [merged]),
                    "\(String(describing: try? page.run("return [\(area).value, window.listsync.errors]")))")
        }
        #expect(try f.operations() == before + typedA.count + typedB.count, "one operation per keystroke")
        // Each person's caret stayed right after what they typed; each page shows the other's.
        #expect(try a.run("return \(area).selectionStart") as? Int == merged.utf16.count)
        #expect(try b.run("return \(area).selectionStart") as? Int == 7)
        #expect(try a.wait(until: "const c = document.querySelector('.remote-caret'); return c !== null && c.dataset.head === '7'"),
                "\(String(describing: try? a.run("return document.querySelector('.carets').outerHTML")))")
        #expect(try b.wait(until: "const c = document.querySelector('.remote-caret'); return c !== null && c.dataset.head === arguments[0]",
                           [String(merged.utf16.count)]),
                "\(String(describing: try? b.run("return document.querySelector('.carets').outerHTML")))")
        for page in [a, b] { #expect((try page.run("return window.listsync.errors") as? [Any])?.isEmpty == true) }
    }
}
#endif
