import Foundation

// The checker behind PlatformTests: reads Package.swift and sources as text (no SwiftSyntax).

/// A version such as `15.0` or `10.15`, compared part by part (missing parts are 0).
struct PlatformVersion: Comparable, ExpressibleByArrayLiteral, CustomStringConvertible {
    var parts: [Int]
    init(_ parts: [Int]) { self.parts = parts }
    init(arrayLiteral parts: Int...) { self.parts = parts }
    init?(_ text: some StringProtocol) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
        guard !parts.isEmpty, !parts.contains(nil) else { return nil }
        self.parts = parts.map { $0! }
    }
    private func padded(_ n: Int) -> [Int] { parts + Array(repeating: 0, count: max(0, n - parts.count)) }
    static func == (a: Self, b: Self) -> Bool {
        let n = max(a.parts.count, b.parts.count)
        return a.padded(n) == b.padded(n)
    }
    static func < (a: Self, b: Self) -> Bool {
        let n = max(a.parts.count, b.parts.count)
        return a.padded(n).lexicographicallyPrecedes(b.padded(n))
    }
    var description: String { parts.count == 1 ? "\(parts[0]).0" : parts.map(String.init).joined(separator: ".") }
}

/// Reads Package.swift and the sources, and says which uses of Synchronization are not covered and
/// which system imports are not guarded.
///
/// Rules:
/// - a use is the identifier `Mutex`, `Atomic` or `AtomicLazyReference` in code (not in a comment or
///   a string literal);
/// - it is covered on a platform when Package.swift's `platforms:` or an `@available` on one of the
///   declarations enclosing it (type, extension, function, property…) names at least the release in
///   ``synchronizationFloor``; it must be covered on all five;
/// - an `import Synchronization` in a file with no such use is reported unless Package.swift alone
///   covers (the file uses something of the module the check does not place);
/// - `import Glibc` / `Darwin` / `Musl` must sit in an `#if` branch whose condition is
///   `canImport(` that module `)` (or in the `#else` of `!canImport(` it `)`).
enum PlatformCheck {
    struct SourceFile {
        var path: String
        var text: String
    }

    /// The releases that ship the Synchronization module.
    static let synchronizationFloor: [String: PlatformVersion] = [
        "macOS": [15], "iOS": [18], "tvOS": [18], "watchOS": [11], "visionOS": [2],
    ]
    /// The releases that ship the Observation module (`@Observable`, `withObservationTracking`).
    static let observationFloor: [String: PlatformVersion] = [
        "macOS": [14], "iOS": [17], "tvOS": [17], "watchOS": [10], "visionOS": [1],
    ]
    static let platformOrder = ["macOS", "iOS", "tvOS", "watchOS", "visionOS"]
    static let synchronizationNames: Set<String> = ["Mutex", "Atomic", "AtomicLazyReference"]
    static let systemModules: Set<String> = ["Glibc", "Darwin", "Musl"]

    /// The files that import Observation, and the platforms of Package.swift that do not reach its
    /// releases (``observationFloor``), as "file: platform release" lines. No `@available` counts:
    /// an observable type is the model of an app and must be usable wherever the package is.
    static func observationProblems(manifest: String, sources: [SourceFile]) -> [String] {
        let declared = declaredPlatforms(inManifest: manifest)
        let short = platformOrder.filter { p in declared[p].map { $0 < observationFloor[p]! } ?? true }
        guard !short.isEmpty else { return [] }
        return sources.filter { file in
            String(decoding: codeOnly(file.text), as: UTF8.self).split(separator: "\n").contains {
                $0.split(separator: " ").first { !$0.isEmpty } == "import" && $0.contains("Observation")
            }
        }.map { "\($0.path): imports Observation, which needs " + short.map { "\($0) \(observationFloor[$0]!)" }.joined(separator: ", ") }
    }

    /// The `.swift` files under `directory` (relative to `root`), paths relative to `root`, sorted.
    static func swiftFiles(under root: URL, in directory: String) throws -> [SourceFile] {
        let base = root.appendingPathComponent(directory)
        guard FileManager.default.fileExists(atPath: base.path) else { return [] }
        return try FileManager.default.subpathsOfDirectory(atPath: base.path)
            .filter { $0.hasSuffix(".swift") }.sorted()
            .map { SourceFile(path: "\(directory)/\($0)",
                              text: try String(contentsOf: base.appendingPathComponent($0), encoding: .utf8)) }
    }

    // MARK: Package.swift

    /// The platforms Package.swift declares (`.macOS(.v15)`, `.macOS(.v10_15)`, `.macOS("15.0")`),
    /// comments ignored; empty when it has no `platforms:`. A platform named twice keeps the lower.
    static func declaredPlatforms(inManifest manifest: String) -> [String: PlatformVersion] {
        let code = String(decoding: codeOnly(manifest, keepStrings: true), as: UTF8.self)
        guard code.contains(#/\bplatforms\s*:/#) else { return [:] }
        var out: [String: PlatformVersion] = [:]
        let pattern = #/\.(macOS|iOS|tvOS|watchOS|visionOS|macCatalyst|driverKit)\(\s*(?:\.v(\d+)(?:_(\d+))?(?:_(\d+))?|"(\d+(?:\.\d+)*)")\s*\)/#
        for m in code.matches(of: pattern) {
            let version: PlatformVersion?
            if let text = m.output.5 { version = PlatformVersion(text) }
            else { version = PlatformVersion([m.output.2, m.output.3, m.output.4].compactMap { $0.flatMap { Int($0) } }) }
            guard let version else { continue }
            let platform = String(m.output.1)
            out[platform] = min(out[platform] ?? version, version)
        }
        return out
    }

    // MARK: @available

    /// The introduced release per platform of one `@available(…)` attribute (short form
    /// `macOS 15.0, iOS 18, *` or long form `macOS, introduced: 15.0`).
    static func introduced(byAttribute attribute: Substring) -> [String: PlatformVersion] {
        guard attribute.hasPrefix("@available"), let open = attribute.firstIndex(of: "("),
              let close = attribute.lastIndex(of: ")") else { return [:] }
        let arguments = attribute[attribute.index(after: open)..<close]
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        func platform(_ name: some StringProtocol) -> String? {
            let name = name.hasSuffix("ApplicationExtension") ? String(name.dropLast("ApplicationExtension".count)) : String(name)
            if name == "OSX" { return "macOS" }
            return ["macOS", "iOS", "tvOS", "watchOS", "visionOS", "macCatalyst"].first { $0 == name }
        }
        var out: [String: PlatformVersion] = [:]
        if let first = arguments.first, let longForm = platform(first) {
            for argument in arguments.dropFirst() {
                if let m = argument.wholeMatch(of: #/introduced\s*:\s*(\d+(?:\.\d+)*)/#), let v = PlatformVersion(m.output.1) {
                    out[longForm] = v
                }
            }
            return out
        }
        for argument in arguments {
            if let m = argument.wholeMatch(of: #/(\w+)\s+(\d+(?:\.\d+)*)/#), let p = platform(m.output.1),
               let v = PlatformVersion(m.output.2) {
                out[p] = v
            }
        }
        return out
    }

    // MARK: Synchronization

    /// The uses of Synchronization in `sources` that no declared release covers, one line per
    /// enclosing type (or file, for a bare import).
    static func synchronizationProblems(manifest: String, sources: [SourceFile]) -> [String] {
        let declared = declaredPlatforms(inManifest: manifest)
        func missing(_ extra: [[String: PlatformVersion]]) -> [String] {
            platformOrder.filter { p in
                let have = ([declared[p]] + extra.map { $0[p] }).compactMap { $0 }.max()
                return have.map { $0 < synchronizationFloor[p]! } ?? true
            }
        }
        func describe(_ platforms: [String]) -> String {
            platforms.map { "\($0) \(synchronizationFloor[$0]!)" }.joined(separator: ", ")
        }
        let manifestSays = declared.isEmpty ? "no platforms"
            : platformOrder.compactMap { p in declared[p].map { "\(p) \($0)" } }.joined(separator: ", ")
        var out: [String] = []
        for file in sources {
            let code = codeOnly(file.text)
            let scan = scanUses(code)
            // Group the uncovered uses by enclosing type and by what is missing.
            var groups: [(place: String, names: Set<String>, lines: [Int], missing: [String])] = []
            for use in scan.uses {
                let lacking = missing(use.enclosing.map(\.introduced))
                guard !lacking.isEmpty else { continue }
                let place = use.enclosing.last { $0.isType }.map { "\($0.keyword) \($0.name)" } ?? "top level"
                if let g = groups.firstIndex(where: { $0.place == place && $0.missing == lacking }) {
                    groups[g].names.insert(use.name)
                    if groups[g].lines.last != use.line { groups[g].lines.append(use.line) }
                } else {
                    groups.append((place, [use.name], [use.line], lacking))
                }
            }
            for g in groups {
                let lines = g.lines.count == 1 ? "line \(g.lines[0])" : "lines " + g.lines.map(String.init).joined(separator: ", ")
                out.append("\(file.path) (\(lines)): \(g.names.sorted().joined(separator: ", ")) in \(g.place) "
                           + "needs \(describe(g.missing)): declare them in Package.swift (it has \(manifestSays)) "
                           + "or put @available(\(describe(platformOrder)), *) on \(g.place)")
            }
            if scan.uses.isEmpty, let line = scan.synchronizationImportLine, !missing([]).isEmpty {
                out.append("\(file.path) (line \(line)): import Synchronization needs \(describe(missing([]))) "
                           + "in Package.swift (it has \(manifestSays))")
            }
        }
        return out
    }

    /// A declaration that opens a scope: its keyword, name and `@available` releases.
    struct Declaration {
        var keyword: String
        var name: String
        var introduced: [String: PlatformVersion]
        var isType: Bool { ["struct", "class", "enum", "actor", "extension", "protocol"].contains(keyword) }
    }

    struct Use {
        var name: String
        var line: Int
        /// The declarations around the use, outermost first.
        var enclosing: [Declaration]
    }

    /// Every use of a Synchronization name in `code` (comments and strings already blanked) with the
    /// declarations around it, and the line of an `import Synchronization`, if any.
    static func scanUses(_ code: [UInt8]) -> (uses: [Use], synchronizationImportLine: Int?) {
        var uses: [Use] = []
        var importLine: Int?
        var scopes: [Declaration?] = []
        var boundary = 0   // where the current statement or declaration began
        var line = 1
        var previousWord = ""
        var i = 0
        while i < code.count {
            let c = code[i]
            if c == UInt8(ascii: "\n") { line += 1; i += 1; continue }
            if c == UInt8(ascii: "{") {
                scopes.append(declaration(in: code[boundary..<i]))
                boundary = i + 1
            } else if c == UInt8(ascii: "}") {
                _ = scopes.popLast()
                boundary = i + 1
            } else if c == UInt8(ascii: ";") {
                boundary = i + 1
            } else if isIdentifierStart(c) {
                var j = i
                while j < code.count, isIdentifierPart(code[j]) { j += 1 }
                let word = String(decoding: code[i..<j], as: UTF8.self)
                if synchronizationNames.contains(word) {
                    // The declaration being written (`@available(…) func f(_ m: Mutex<Int>)`) counts too.
                    let enclosing = scopes.compactMap { $0 } + [declaration(in: code[boundary..<i])].compactMap { $0 }
                    uses.append(Use(name: word, line: line, enclosing: enclosing))
                } else if word == "Synchronization" && previousWord == "import" && scopes.isEmpty {
                    importLine = importLine ?? line
                }
                previousWord = word
                i = j
                continue
            }
            i += 1
        }
        return (uses, importLine)
    }

    static let declarationKeywords: Set<String> = [
        "struct", "class", "enum", "actor", "extension", "protocol", "func", "init", "deinit", "subscript",
        "var", "let", "typealias",
    ]
    static let modifiers: Set<String> = [
        "public", "private", "fileprivate", "internal", "package", "open", "final", "static", "class",
        "nonisolated", "mutating", "nonmutating", "override", "convenience", "required", "indirect",
        "dynamic", "lazy", "weak", "unowned", "optional", "distributed", "consuming", "borrowing",
    ]

    /// The declaration `header` (the code from the end of the previous statement to a `{` or a use)
    /// ends with, or nil when it is not one (a closure, `if let`, `guard`, `switch`…): its last
    /// declaration keyword, if that starts a line after its attributes and modifiers.
    static func declaration(in header: ArraySlice<UInt8>) -> Declaration? {
        struct Token { var text: Substring; var newlineBefore: Bool }
        let text = String(decoding: header, as: UTF8.self)
        var tokens: [Token] = []
        var k = text.startIndex
        var newline = true   // the header starts after a boundary
        func groupEnd(from open: String.Index) -> String.Index {   // past the ) matching the ( at `open`
            var depth = 0, j = open
            while j < text.endIndex {
                if text[j] == "(" { depth += 1 } else if text[j] == ")" { depth -= 1; if depth == 0 { return text.index(after: j) } }
                j = text.index(after: j)
            }
            return text.endIndex
        }
        while k < text.endIndex {
            let ch = text[k]
            if ch.isWhitespace { if ch.isNewline { newline = true }; k = text.index(after: k); continue }
            var end = text.index(after: k)
            if ch == "@" || ch.isLetter || ch == "_" {
                while end < text.endIndex, text[end].isLetter || text[end].isNumber || text[end] == "_" { end = text.index(after: end) }
                let word = text[k..<end]
                // `@available(…)` and `private(set)` are one token.
                if end < text.endIndex, text[end] == "(", ch == "@" || modifiers.contains(String(word)) { end = groupEnd(from: end) }
            }
            tokens.append(Token(text: text[k..<end], newlineBefore: newline))
            newline = false
            k = end
        }
        guard let last = tokens.lastIndex(where: { declarationKeywords.contains(String($0.text)) }) else { return nil }
        var first = last
        while first > 0, tokens[first - 1].text.hasPrefix("@") || modifiers.contains(String(tokens[first - 1].text.prefix { $0 != "(" })) {
            first -= 1
        }
        guard tokens[first].newlineBefore else { return nil }
        var introduced: [String: PlatformVersion] = [:]
        for t in tokens[first..<last] where t.text.hasPrefix("@available") {
            introduced.merge(PlatformCheck.introduced(byAttribute: t.text)) { max($0, $1) }
        }
        let keyword = String(tokens[last].text)
        var name = keyword
        if !["init", "deinit", "subscript"].contains(keyword), last + 1 < tokens.count {
            name = String(tokens[last + 1].text)
            var n = last + 2
            while n + 1 < tokens.count, tokens[n].text == "." {   // extension Outer.Inner
                name += "." + tokens[n + 1].text
                n += 2
            }
        }
        return Declaration(keyword: keyword, name: name, introduced: introduced)
    }

    static func isIdentifierStart(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
            || c == UInt8(ascii: "_") || c >= 0x80
    }
    static func isIdentifierPart(_ c: UInt8) -> Bool {
        isIdentifierStart(c) || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"))
    }

    // MARK: System imports

    /// `import Glibc` / `Darwin` / `Musl` lines not inside an `#if canImport(` that module `)`.
    static func unguardedSystemImports(in sources: [SourceFile]) -> [String] {
        var out: [String] = []
        for file in sources {
            let code = String(decoding: codeOnly(file.text), as: UTF8.self)
            // Each open #if: the condition of the current branch, and the negated earlier ones.
            var branches: [(condition: String?, negated: [String])] = []
            for (n, raw) in code.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let line = raw.trimmingCharacters(in: .whitespaces)
                let condition = { (directive: String) in
                    String(line.dropFirst(directive.count).filter { !$0.isWhitespace })
                }
                if line.hasPrefix("#if ") || line.hasPrefix("#if(") || line.hasPrefix("#if!") {
                    branches.append((condition("#if"), []))
                } else if line.hasPrefix("#elseif"), let top = branches.popLast() {
                    branches.append((condition("#elseif"), top.negated + [top.condition].compactMap { $0 }))
                } else if line.hasPrefix("#else"), let top = branches.popLast() {
                    branches.append((nil, top.negated + [top.condition].compactMap { $0 }))
                } else if line.hasPrefix("#endif") {
                    _ = branches.popLast()
                } else if line.contains("import"), let m = line.firstMatch(of: #/^(?:@\w+\s+)*import\s+(?:(?:struct|class|enum|protocol|typealias|func|let|var)\s+)?(\w+)\b/#),
                          systemModules.contains(String(m.output.1)) {
                    let module = String(m.output.1)
                    let test = "canImport(\(module))"
                    let guarded = branches.contains { branch in
                        let positive = branch.condition.map { c in
                            c.ranges(of: test).contains { $0.lowerBound == c.startIndex || c[c.index(before: $0.lowerBound)] != "!" }
                        } ?? false
                        return positive || branch.negated.contains { $0.contains("!" + test) }
                    }
                    if !guarded { out.append("\(file.path):\(n + 1): import \(module) outside #if canImport(\(module))") }
                }
            }
        }
        return out
    }

    // MARK: Lexing

    /// `source` with every comment blanked and, unless `keepStrings`, the contents of every string
    /// literal (interpolated code stays); newlines stay, so line numbers do not move.
    static func codeOnly(_ source: String, keepStrings: Bool = false) -> [UInt8] {
        var lexer = Lexer(bytes: Array(source.utf8), keepStrings: keepStrings)
        lexer.code(interpolation: false)
        return lexer.bytes
    }

    private struct Lexer {
        var bytes: [UInt8]
        let keepStrings: Bool
        var i = 0

        static let slash = UInt8(ascii: "/"), star = UInt8(ascii: "*"), quote = UInt8(ascii: "\""),
                   hash = UInt8(ascii: "#"), backslash = UInt8(ascii: "\\"), newline = UInt8(ascii: "\n"),
                   open = UInt8(ascii: "("), close = UInt8(ascii: ")")

        func at(_ k: Int) -> UInt8? { k < bytes.count ? bytes[k] : nil }
        mutating func blank(_ k: Int) { if k < bytes.count, bytes[k] != Self.newline { bytes[k] = UInt8(ascii: " ") } }
        func hashes(from k: Int, _ n: Int) -> Bool { (0..<n).allSatisfy { at(k + $0) == Self.hash } }

        /// Code up to the end, or (in an interpolation) past the `)` that closes it.
        mutating func code(interpolation: Bool) {
            var depth = 0
            while i < bytes.count {
                let c = bytes[i]
                if c == Self.slash && at(i + 1) == Self.slash {
                    while i < bytes.count && bytes[i] != Self.newline { blank(i); i += 1 }
                } else if c == Self.slash && at(i + 1) == Self.star {
                    blockComment()
                } else if c == Self.quote || (c == Self.hash && rawStringStarts()) {
                    string()
                } else if interpolation && c == Self.open {
                    depth += 1; i += 1
                } else if interpolation && c == Self.close {
                    i += 1
                    if depth == 0 { return }
                    depth -= 1
                } else {
                    i += 1
                }
            }
        }

        func rawStringStarts() -> Bool {
            var k = i
            while at(k) == Self.hash { k += 1 }
            return at(k) == Self.quote
        }

        /// A `/* … */` comment, nested ones included.
        mutating func blockComment() {
            var depth = 0
            repeat {
                if at(i) == Self.slash && at(i + 1) == Self.star { depth += 1; blank(i); blank(i + 1); i += 2 }
                else if at(i) == Self.star && at(i + 1) == Self.slash { depth -= 1; blank(i); blank(i + 1); i += 2 }
                else { blank(i); i += 1 }
            } while depth > 0 && i < bytes.count
        }

        /// A string literal (`"…"`, `"""…"""`, raw `#"…"#`), from its opening delimiter.
        mutating func string() {
            var n = 0
            while bytes[i] == Self.hash { n += 1; i += 1 }
            let multiline = at(i) == Self.quote && at(i + 1) == Self.quote && at(i + 2) == Self.quote
            i += multiline ? 3 : 1
            while i < bytes.count {
                let c = bytes[i]
                if c == Self.backslash && hashes(from: i + 1, n) {
                    let next = i + 1 + n
                    if at(next) == Self.open {   // interpolation: code until its `)`
                        i = next + 1
                        code(interpolation: true)
                        continue
                    }
                    if !keepStrings { for k in i...next { blank(k) } }
                    i = next + 1
                    continue
                }
                if c == Self.quote, multiline ? (at(i + 1) == Self.quote && at(i + 2) == Self.quote && hashes(from: i + 3, n))
                                              : hashes(from: i + 1, n) {
                    i += (multiline ? 3 : 1) + n
                    return
                }
                if c == Self.newline && !multiline { return }   // unterminated: give up at the line end
                if !keepStrings { blank(i) }
                i += 1
            }
        }
    }
}
