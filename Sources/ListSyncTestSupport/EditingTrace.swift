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

    /// Parses the JSON Lines text (the subset ``TraceScanner`` reads).
    static func parse(_ bytes: [UInt8]) throws -> [Edit] {
        var edits: [Edit] = []
        var s = TraceScanner(bytes: bytes) { FormatError(line: $0, reason: $1) }
        while s.i < bytes.count {
            if bytes[s.i] == 0x0A { s.i += 1; s.line += 1; continue }
            let e = try s.edit()
            edits.append(Edit(position: e.position, deleteCount: e.deleteCount, text: e.text))
        }
        return edits
    }
}
@_exported import ListCRDT
