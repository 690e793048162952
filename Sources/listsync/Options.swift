import Foundation

struct UsageError: Error { var message: String }

/// The default daemon port (DaemonConfiguration.defaultPort, repeated here so `--help` needs no daemon).
let defaultPort: UInt16 = 7450

// The pure parsing of the command line (no I/O besides the environment fallback): compiled by
// path into the fuzz harness Tests/Fuzz/Harnesses/cli.swift, so keep it free of the rest of the tool.

/// Command-line options: `--name value`, `--name=value` and flags, each with an environment
/// variable as fallback; positional arguments in order.
struct Options {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positional: [String] = []

    /// Parses `args` knowing which options take values and which are flags.
    init(_ args: [String], values known: Set<String>, flags knownFlags: Set<String>) throws {
        var i = 0
        while i < args.count {
            let a = args[i]
            if a == "--" {
                positional += args[(i + 1)...]
                break
            }
            if a.hasPrefix("--") || a == "-h" {
                var name = a, inline: String?
                if let eq = a.firstIndex(of: "=") {
                    name = String(a[..<eq])
                    inline = String(a[a.index(after: eq)...])
                }
                if name == "-h" { name = "--help" }
                if knownFlags.contains(name) {
                    flags.insert(name)
                } else if known.contains(name) {
                    if let inline {
                        values[name, default: []].append(inline)
                    } else {
                        i += 1
                        guard i < args.count else { throw UsageError(message: "\(name) needs a value") }
                        values[name, default: []].append(args[i])
                    }
                } else {
                    throw UsageError(message: "unknown option '\(name)'")
                }
            } else {
                positional.append(a)
            }
            i += 1
        }
    }

    /// The option's last value, else the environment variable's, else nil.
    func value(_ name: String, env: String? = nil) -> String? {
        if let v = values[name]?.last { return v }
        if let env, let v = ProcessInfo.processInfo.environment[env], !v.isEmpty { return v }
        return nil
    }

    /// Every value of a repeatable option, else the environment variable's (comma-separated).
    func all(_ name: String, env: String? = nil) -> [String] {
        if let v = values[name] { return v }
        if let env, let v = ProcessInfo.processInfo.environment[env], !v.isEmpty {
            return v.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        return []
    }

    func has(_ flag: String) -> Bool { flags.contains(flag) }
}

/// `HOST:PORT`, `[v6]:PORT`, `:PORT` or `HOST` (default port).
func parseAddress(_ text: String, defaultHost: String = "127.0.0.1", what: String) throws -> (String, UInt16) {
    var host = text, portText: String?
    if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
        host = String(text[text.index(after: text.startIndex)..<close])
        let after = text[text.index(after: close)...]
        if after.hasPrefix(":") { portText = String(after.dropFirst()) }
    } else if let colon = text.lastIndex(of: ":"), text.filter({ $0 == ":" }).count == 1 {
        host = String(text[..<colon])
        portText = String(text[text.index(after: colon)...])
    }
    if host.isEmpty { host = defaultHost }
    guard let p = portText.map({ UInt16($0) }) ?? UInt16(defaultPort) else {
        throw UsageError(message: "\(what) must look like HOST:PORT, not '\(text)'")
    }
    return (host, p)
}

/// An index path argument: `S.I` is item I of section S; `S` alone is section S.
enum PathArgument: Equatable {
    case section(Int)
    case item(IndexPath)

    init(_ text: String) throws {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let numbers = parts.map { Int($0) }
        guard !parts.isEmpty, parts.count <= 2, numbers.allSatisfy({ $0 != nil && $0! >= 0 }) else {
            throw UsageError(message: "'\(text)' is not an index path (like 0.3 for item 3 of section 0, or 2 for section 2)")
        }
        self = parts.count == 1 ? .section(numbers[0]!) : .item(IndexPath(item: numbers[1]!, section: numbers[0]!))
    }

    var text: String {
        switch self {
        case let .section(s): return "\(s)"
        case let .item(p): return "\(p.section).\(p.item)"
        }
    }
}

/// The default data folder: `~/.listsync`.
func defaultDataFolder() -> String {
    let home = ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()
    return home + "/.listsync"
}

/// Writes `text` to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
