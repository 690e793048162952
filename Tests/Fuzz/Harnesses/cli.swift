// Client command arguments: the CLI's option parsing (Options), its index paths (PathArgument) and
// its addresses (parseAddress), compiled in from Sources/listsync/Options.swift (build.sh), since
// an executable target cannot be imported.
//
// The input is the argument list, NUL-separated, each argument read as UTF-8 (invalid sequences
// repaired, as the shell's bytes are by CommandLine.arguments).
// Properties: no crash; a parsed index path prints to text that parses to the same path.
import Foundation

func fuzzSeeds() -> [[UInt8]] {
    let lists: [[String]] = [
        ["insert", "0.3", "milk", "--json"],
        ["move", "0.1", "1.0", "--daemon", "127.0.0.1:7450"],
        ["--listen=[::1]:9000", "--peer", "host:1", "--peer", ":2", "--data", "/tmp/x", "--", "-h"],
        ["delete", "2", "--daemon=example.org"],
        ["rename", "12.", ".3", "--key-file"],
    ]
    return lists.map { Array($0.joined(separator: "\0").utf8) }
}

let clientValues: Set<String> = ["--daemon", "--key-file", "--data", "--name", "--value"]
let clientFlags: Set<String> = ["--help", "--json", "--follow"]
let serveValues: Set<String> = ["--data", "--listen", "--key-file", "--peer", "--max-connections", "--idle-unload", "--log-format"]

func fuzzOne(_ bytes: [UInt8]) {
    let args = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    for (values, flags) in [(clientValues, clientFlags), (serveValues, Set(["--help"]))] {
        guard let o = try? Options(args, values: values, flags: flags) else { continue }
        let parsed = o.positional.count + o.values.values.reduce(0) { $0 + $1.count } + o.flags.count
        guard parsed <= args.count else { fuzzFailure("\(parsed) things parsed from \(args.count) arguments") }
        for text in o.positional + o.values.values.flatMap({ $0 }) {
            if let path = try? PathArgument(text) {
                guard (try? PathArgument(path.text)) == path else { fuzzFailure("'\(text)' → \(path.text) does not parse back") }
            }
            _ = try? parseAddress(text, what: "--daemon")
        }
    }
    for a in args {
        _ = try? PathArgument(a)
        _ = try? parseAddress(a, defaultHost: "", what: "--peer")
    }
}
