import Foundation

/// A recorded editing session: one `[position, deleteCount, "text"]` edit per line (JSON Lines),
/// as in `Benchmarks/Traces/`.
public struct EditingTrace: Sendable {
    /// One edit: delete `deleteCount` elements at `position`, then insert `text` there.
    public struct Edit: Sendable, Equatable {
        public var position: Int
        public var deleteCount: Int
        public var text: [UInt8]
    }

    /// The edits, in order.
    public var edits: [Edit]
    /// The expected final content, if a `.final.txt` file was next to the trace.
    public var finalText: [UInt8]?

    /// Why a trace file could not be read.
    public struct FormatError: Error, CustomStringConvertible {
        public var line: Int
        public var reason: String
        public var description: String { "trace line \(line): \(reason)" }
    }

    /// Reads `NAME.jsonl` (and `NAME.final.txt` if present) from `directory`.
    public init(named name: String, in directory: URL) throws {
        let data = try Data(contentsOf: directory.appendingPathComponent("\(name).jsonl"))
        edits = try Self.parse(Array(data))
        finalText = (try? Data(contentsOf: directory.appendingPathComponent("\(name).final.txt"))).map(Array.init)
    }

    /// Number of single-element inserts and deletes the trace performs.
    public var elementOperations: Int { edits.reduce(0) { $0 + $1.deleteCount + $1.text.count } }

    /// Applies the trace to a plain array (the reference result).
    public func replayOnArray() -> [UInt8] {
        var out: [UInt8] = []
        for e in edits {
            out.replaceSubrange(e.position..<(e.position + e.deleteCount), with: e.text)
        }
        return out
    }

    /// Parses the JSON Lines text. Only the subset the traces use: non-negative integers and
    /// strings with the escapes `\" \\ \/ \n \t \r \b \f \uXXXX` (ASCII content).
    static func parse(_ bytes: [UInt8]) throws -> [Edit] {
        var edits: [Edit] = []
        var i = 0
        var line = 1
        func fail(_ why: String) -> FormatError { FormatError(line: line, reason: why) }
        func skipSpaces() { while i < bytes.count, bytes[i] == 0x20 { i += 1 } }
        func expect(_ c: UInt8) throws {
            skipSpaces()
            guard i < bytes.count, bytes[i] == c else { throw fail("expected '\(Character(UnicodeScalar(c)))'") }
            i += 1
        }
        func integer() throws -> Int {
            skipSpaces()
            var n = 0, digits = 0
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 {
                n = n * 10 + Int(bytes[i] - 0x30)
                i += 1
                digits += 1
            }
            if digits == 0 { throw fail("expected a number") }
            return n
        }
        func string() throws -> [UInt8] {
            try expect(0x22)
            var out: [UInt8] = []
            while true {
                guard i < bytes.count else { throw fail("unterminated string") }
                let c = bytes[i]
                i += 1
                if c == 0x22 { return out }
                if c != 0x5C { out.append(c); continue }
                guard i < bytes.count else { throw fail("bad escape") }
                let e = bytes[i]
                i += 1
                switch e {
                case 0x22, 0x5C, 0x2F: out.append(e)
                case 0x6E: out.append(0x0A)
                case 0x74: out.append(0x09)
                case 0x72: out.append(0x0D)
                case 0x62: out.append(0x08)
                case 0x66: out.append(0x0C)
                case 0x75:
                    guard i + 4 <= bytes.count, let v = UInt32(String(decoding: bytes[i..<(i + 4)], as: UTF8.self), radix: 16),
                          let scalar = UnicodeScalar(v) else { throw fail("bad \\u escape") }
                    out.append(contentsOf: Array(String(Character(scalar)).utf8))
                    i += 4
                default: throw fail("bad escape")
                }
            }
        }
        while i < bytes.count {
            if bytes[i] == 0x0A { i += 1; line += 1; continue }
            try expect(0x5B)
            let position = try integer()
            try expect(0x2C)
            let deleteCount = try integer()
            try expect(0x2C)
            let text = try string()
            try expect(0x5D)
            edits.append(Edit(position: position, deleteCount: deleteCount, text: text))
        }
        return edits
    }
}
@_exported import ListCRDT
