import Foundation

/// A file written by `listsync export` (Output.swift's `writeExport`), read for `import` and
/// `restore` without holding it more than once: the file is mapped, its top-level JSON object
/// scanned for the keys it needs, and the snapshot's base64 decoded straight from the mapped
/// bytes. Memory: the snapshot, plus the file's pages while they are read (not a parsed copy of
/// the JSON, a string of the base64 and the decoded bytes again).
struct ExportFile {
    /// The document's name in the file, if it has one.
    var name: String?
    /// The document's snapshot (the `snapshot` key, decoded).
    var snapshot: [UInt8]

    /// Reads `path`.
    ///
    /// - Throws: ``CommandFailure`` when it cannot be read, or is not such a file (not a JSON
    ///   object, `format` not `listsync-export`, no `snapshot` in base64).
    /// - Complexity: O(size of the file).
    static func read(_ path: String) throws(CommandFailure) -> ExportFile {
        // Mapped where it can be (an empty file or a pipe cannot: read then).
        guard let data = (try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped))
                ?? FileManager.default.contents(atPath: path) else {
            throw CommandFailure(description: "cannot read \(path)")
        }
        let read = data.withUnsafeBytes { raw -> ExportFile? in
            var scan = JSONScanner(bytes: raw.bindMemory(to: UInt8.self))
            return scan.exportFile()
        }
        guard let read else { throw CommandFailure(description: "\(path) is not a file written by `listsync export`") }
        return read
    }
}

/// Just enough of JSON for ``ExportFile``: one top-level object whose values are skipped
/// (nested ones too) except the strings it asks for.
private struct JSONScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var at = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The export file's fields, or nil if the bytes are not one such object.
    mutating func exportFile() -> ExportFile? {
        var format: String?, name: String?, snapshot: [UInt8]?
        guard take(UInt8(ascii: "{")) else { return nil }
        var first = true
        while true {
            skipSpace()
            if take(UInt8(ascii: "}")) { break }
            if !first { guard take(UInt8(ascii: ",")) else { return nil } }
            first = false
            skipSpace()
            guard let key = stringRange(), let keyText = text(key) else { return nil }
            guard take(UInt8(ascii: ":")) else { return nil }
            skipSpace()
            switch keyText {
            case "format", "name":
                // A name that is not a string is no name (the import names the document itself).
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else {
                    guard keyText == "name", skipValue() else { return nil }
                    name = nil
                    continue
                }
                guard let r = stringRange() else { return nil }
                if keyText == "format" { format = text(r) } else { name = text(r) }
            case "snapshot":
                guard let r = stringRange(), let decoded = base64(r) else { return nil }
                snapshot = decoded
            default:
                guard skipValue() else { return nil }
            }
        }
        skipSpace()
        guard at == bytes.count, format == "listsync-export", let snapshot else { return nil }
        return ExportFile(name: name, snapshot: snapshot)
    }

    mutating func skipSpace() {
        while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
    }

    mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard at < bytes.count, bytes[at] == byte else { return false }
        at += 1
        return true
    }

    /// A string at `at`: the range of its contents (quotes excluded), and whether it has escapes.
    mutating func stringRange() -> (range: Range<Int>, escaped: Bool)? {
        guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { return nil }
        let start = at + 1
        var i = start, escaped = false
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "\""):
                at = i + 1
                return (start..<i, escaped)
            case UInt8(ascii: "\\"):
                escaped = true
                i += 2
            case 0..<0x20:
                return nil
            default:
                i += 1
            }
        }
        return nil
    }

    /// A string's text (escapes decoded by Foundation, for the rare string that has them).
    func text(_ s: (range: Range<Int>, escaped: Bool)) -> String? {
        let slice = UnsafeBufferPointer(rebasing: bytes[s.range])
        guard s.escaped else { return String(validating: slice, as: UTF8.self) }
        let quoted = Data(bytes[(s.range.lowerBound - 1)...s.range.upperBound])
        return (try? JSONSerialization.jsonObject(with: quoted, options: .fragmentsAllowed)) as? String
    }

    /// A string's contents decoded as base64 (padded, as `export` writes it).
    func base64(_ s: (range: Range<Int>, escaped: Bool)) -> [UInt8]? {
        if s.escaped {
            // Only a writer that escapes "/" makes these: decoded through its text.
            return text(s).flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) }
        }
        let count = s.range.count
        guard count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(count / 4 * 3)
        var i = s.range.lowerBound
        while i < s.range.upperBound {
            var quad: UInt32 = 0, pad = 0
            for k in 0..<4 {
                let c = bytes[i + k]
                if c == UInt8(ascii: "=") {
                    // Padding only in the last group's last two places.
                    guard i + 4 == s.range.upperBound, k >= 2 else { return nil }
                    pad += 1
                    quad <<= 6
                    continue
                }
                guard pad == 0, let v = Self.sextet(c) else { return nil }
                quad = quad << 6 | UInt32(v)
            }
            out.append(UInt8(truncatingIfNeeded: quad >> 16))
            if pad < 2 { out.append(UInt8(truncatingIfNeeded: quad >> 8)) }
            if pad < 1 { out.append(UInt8(truncatingIfNeeded: quad)) }
            i += 4
        }
        return out
    }

    static func sextet(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }

    /// Skips one value of any kind (objects and arrays with what they hold).
    mutating func skipValue() -> Bool {
        skipSpace()
        guard at < bytes.count else { return false }
        switch bytes[at] {
        case UInt8(ascii: "\""):
            return stringRange() != nil
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while at < bytes.count {
                switch bytes[at] {
                case UInt8(ascii: "\""):
                    guard stringRange() != nil else { return false }
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 {
                        at += 1
                        return true
                    }
                default: break
                }
                at += 1
            }
            return false
        default:
            // A number, true, false or null.
            let start = at
            while at < bytes.count, Self.scalarByte(bytes[at]) { at += 1 }
            return at > start
        }
    }

    static func scalarByte(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "E"): return true
        default: return false
        }
    }
}
