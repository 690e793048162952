import Foundation
import ListSyncTestTraits
import Testing

/// The Swift samples of the README and of `Docs/*.md`, type-checked against the modules this
/// build made (`swiftc -typecheck`), so a sample that drifts from the API fails the suite.
///
/// How a page marks its samples (an HTML comment on the line right before the ```` ```swift ````
/// fence; Docs/README.md, "Samples"):
/// - `<!-- sample: skip REASON -->`: not compiled (UIKit or SwiftUI, which Linux lacks); the
///   reason is required.
/// - `<!-- sample: given` … `-->`: declarations the fragment takes as given (the `key`, the
///   `client` of an earlier sample), prepended to it; `given()` stands for any value of a type.
/// Every other sample is compiled as it is, as the `main.swift` of a program of its own.
@Suite("Doc samples compile", .ownThread, .serialized, .hangGuard)
struct DocSampleTests {
    /// One ```` ```swift ```` block of a page.
    struct Sample {
        var page: String
        var line: Int
        var code: String
        var given: String?
        var skipped: String?
    }

    /// The repository root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The pages whose samples are checked: the README and every page of Docs/.
    static func pages() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "Docs/" + $0 }
        return ["README.md"] + docs
    }

    /// The Swift samples of `page`, with their markers.
    static func samples(of page: String) throws -> [Sample] {
        let lines = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var found: [Sample] = []
        var i = 0
        while i < lines.count {
            guard lines[i].trimmingCharacters(in: .whitespaces) == "```swift" else { i += 1; continue }
            // The marker: the comment that ends on the line before the fence.
            var given: String?, skipped: String?
            if i > 0, lines[i - 1].hasSuffix("-->") {
                var start = i - 1
                while start > 0, !lines[start].hasPrefix("<!--") { start -= 1 }
                let comment = lines[start..<i].joined(separator: "\n")
                if let r = comment.range(of: "<!-- sample: skip") {
                    skipped = comment[r.upperBound...].replacingOccurrences(of: "-->", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
                } else if comment.hasPrefix("<!-- sample: given") {
                    given = lines[(start + 1)..<(i - 1)].joined(separator: "\n")
                }
            }
            var end = i + 1
            while end < lines.count, lines[end].trimmingCharacters(in: .whitespaces) != "```" { end += 1 }
            found.append(Sample(page: page, line: i + 1, code: lines[(i + 1)..<end].joined(separator: "\n"), given: given, skipped: skipped))
            i = end + 1
        }
        return found
    }

    /// The build folder the tests run from (`.build/debug`), where the modules are.
    static func buildFolder() -> URL? {
        guard let binary = listsyncBinary() else { return nil }
        return URL(fileURLWithPath: binary).deletingLastPathComponent()
    }

    /// Type-checks one sample; nil when it compiles, else the compiler's complaint.
    static func typecheck(_ sample: Sample, build: URL, in folder: URL) throws -> String? {
        let main = folder.appendingPathComponent("main.swift")
        let prelude = folder.appendingPathComponent("Given.swift")
        let header = "// \(sample.page):\(sample.line)\n"
        try Data((header + (sample.given.map { $0 + "\n" } ?? "") + sample.code + "\n").utf8).write(to: main)
        try Data("/// Any value of a type: what a sample takes as given.\nfunc given<T>() -> T { fatalError() }\n".utf8).write(to: prelude)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["swiftc", "-typecheck", "-swift-version", "6",
                         "-I", build.appendingPathComponent("Modules").path, "-I", build.path]
        let cModule = root.appendingPathComponent("Sources/CListSyncLinux/include/module.modulemap")
        if FileManager.default.fileExists(atPath: cModule.path) {
            arguments += ["-Xcc", "-fmodule-map-file=\(cModule.path)", "-I", cModule.deletingLastPathComponent().path]
        }
        p.arguments = arguments + [main.path, prelude.path]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return p.terminationStatus == 0 ? nil : text
    }

    @Test("the pages hold Swift samples, and every skipped one says why")
    func markers() throws {
        var all: [Sample] = []
        for page in try Self.pages() { all += try Self.samples(of: page) }
        #expect(all.count >= 20, "the parser finds the samples")
        for s in all where s.skipped != nil {
            #expect(!s.skipped!.isEmpty, "\(s.page):\(s.line) is skipped without a reason")
            #expect(s.code.contains("SwiftUI") || s.code.contains("UIKit") || s.skipped!.contains("SwiftUI") || s.skipped!.contains("UIKit"),
                    "\(s.page):\(s.line): only UIKit and SwiftUI samples are skipped")
        }
    }

    @Test("every Swift sample of README.md and Docs/*.md type-checks against the built modules")
    func samplesCompile() throws {
        #if os(Linux)
        let build = try #require(Self.buildFolder(), "the build folder (next to the listsync binary)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("listsync-samples-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var checked = 0
        for page in try Self.pages() {
            for sample in try Self.samples(of: page) where sample.skipped == nil {
                if let complaint = try Self.typecheck(sample, build: build, in: folder) {
                    Issue.record("\(sample.page):\(sample.line) does not compile:\n\(complaint)")
                }
                checked += 1
            }
        }
        #expect(checked >= 15)
        #endif
    }
}
