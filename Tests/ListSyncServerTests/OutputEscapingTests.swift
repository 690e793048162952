import Foundation
@testable import ListSyncServer
import ListSyncFiles
import ListSyncTestTraits
import Testing

/// Names and texts others chose never reach a terminal or a log raw (Docs/Security.md, "Output").
@Suite("Output: control characters escaped")
struct PrintableTextTests {
    @Test("controls (C0, DEL, C1, separators, bidi) and backslashes become Swift escapes; other text is kept")
    func escaped() {
        #expect(PrintableText.escaped("groceries ✓ é 🛒") == "groceries ✓ é 🛒")
        #expect(PrintableText.escaped("a\nb\r\tc\0") == #"a\nb\r\tc\0"#)
        #expect(PrintableText.escaped("\u{1B}[31mred\u{07}") == #"\u{1B}[31mred\u{7}"#)
        #expect(PrintableText.escaped("\u{7F}\u{85}\u{9B}\u{2028}\u{202E}\u{2066}") == #"\u{7F}\u{85}\u{9B}\u{2028}\u{202E}\u{2066}"#)
        #expect(PrintableText.escaped(#"C:\dir"#) == #"C:\\dir"#)
        // Every scalar of 0...0x2100 and the bidi ones: the escaped form has no control left.
        let all = String(String.UnicodeScalarView((0...0x2100).compactMap(Unicode.Scalar.init) + ["\u{202E}", "\u{2069}"]))
        let out = PrintableText.escaped(all)
        #expect(!out.unicodeScalars.contains(where: PrintableText.needsEscape))
    }

    @Test("escapedJSON: valid JSON of the same values, with no raw control in it")
    func json() throws {
        let name = "evil\n\u{1B}]0;title\u{07}\u{7F}\u{85}\u{9B}31m\u{2028}\u{202E}\\\"end"
        let data = try JSONSerialization.data(withJSONObject: ["name": name, "list": [name]], options: [.sortedKeys, .prettyPrinted])
        let text = PrintableText.escapedJSON(String(decoding: data, as: UTF8.self))
        #expect(!text.unicodeScalars.contains { $0 != "\n" && PrintableText.needsEscape($0) }, "\(text.debugDescription)")
        let back = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(back["name"] as? String == name)
        #expect(back["list"] as? [String] == [name])
    }
}

@Suite("Output through the binary: names that try to forge log lines and drive the terminal", .ownThread, .serialized,
       .hangGuard)
struct OutputProcessTests {
    /// A name with a newline that starts a fake log line, ESC sequences (clear, title, colour), BEL,
    /// DEL, C1 controls (NEL, CSI) and bidi and line separators: no NUL (argv cannot carry one).
    static let evil = "evil\n2026-01-01T00:00:00Z document created id=forged name=x\u{1B}[2J\u{1B}]0;pwned\u{07}"
        + "\r\u{7F}\u{85}\u{9B}31m\u{2028}\u{202E}tab\there"

    /// Whether `text` holds a control character other than the newlines that end its lines.
    static func rawControls(_ text: String) -> [UInt32] {
        text.unicodeScalars.filter { $0 != "\n" && PrintableText.needsEscape($0) }.map(\.value)
    }

    @Test("a daemon log line, docs, show, insert and --json: one line per name, no raw control anywhere")
    func throughTheBinary() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path + "/text")
        defer { d.terminate() }
        let created = try #require(try d.json(["create", Self.evil, "--sections", "a\u{1B}[1mb"]) as? [String: Any])
        let doc = try #require(created["id"] as? String)
        #expect(created["name"] as? String == Self.evil, "--json keeps the exact name")
        let (code, inserted, _) = try d.run(["insert", doc, "0.0", "item\u{1B}[31m\rred"])
        #expect(code == 0 && Self.rawControls(inserted).isEmpty, "\(inserted.debugDescription)")
        #expect(inserted.contains(#"in evil\n2026-01-01T00:00:00Z document created"#))
        let escapedName = PrintableText.escaped(Self.evil)
        for args in [["docs"], ["show", doc]] {
            let (code, out, err) = try d.run(args)
            #expect(code == 0, "\(args): \(err)")
            #expect(Self.rawControls(out).isEmpty, "\(args) printed raw controls: \(Self.rawControls(out))")
            let lines = out.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.filter { $0.contains("evil") }.count == 1, "\(args): one line holds the name: \(out.debugDescription)")
            #expect(out.contains(escapedName), "\(args): \(out.debugDescription)")
            #expect(!lines.contains { $0.hasPrefix("2026-01-01") }, "\(args): no forged line")
        }
        let (_, shown, _) = try d.run(["show", doc])
        #expect(shown.contains(#"[0] a\u{1B}[1mb"#) && shown.contains(#"item\u{1B}[31m\rred"#), "\(shown.debugDescription)")
        let (_, json, _) = try d.run(["docs"], json: true)
        #expect(Self.rawControls(json).isEmpty, "docs --json: \(Self.rawControls(json))")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        #expect(list.first?["name"] as? String == Self.evil)
        // The daemon's log: the event is one line, the name escaped inside its quoted field.
        #expect(eventually { d.log.contains("document created") })
        let log = d.log
        #expect(Self.rawControls(log).isEmpty, "log: \(Self.rawControls(log))")
        let forged = log.split(separator: "\n").filter { $0.hasPrefix("2026-01-01T00:00:00Z") }
        #expect(forged.isEmpty, "forged log lines: \(forged)")
        let line = try #require(log.split(separator: "\n").first { $0.contains(" document created ") && $0.contains("evil") })
        #expect(line.contains("name=\"" + escapedName.replacingOccurrences(of: "\"", with: "\\\"") + "\""), "\(line)")
    }

    @Test("--log-format json: each line is one JSON object, the name exact once decoded, no raw control")
    func jsonLog() throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        let d = try DaemonProcess(data: dir.path + "/json", extra: ["--log-format", "json"])
        defer { d.terminate() }
        _ = try d.json(["create", Self.evil])
        #expect(eventually { d.log.contains("document created") })
        let lines = d.log.split(separator: "\n").filter { $0.hasPrefix("{") }
        #expect(Self.rawControls(d.log).isEmpty)
        let events = try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String]) }
        let created = try #require(events.first { $0["event"] == "document created" })
        #expect(created["name"] == Self.evil)
    }
}
