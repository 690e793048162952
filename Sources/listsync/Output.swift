import Foundation
import ListCRDT
import ListSync
import ListSyncFiles

/// Output written in pieces as it is made (`show --json`, `export`): a buffer of at most
/// `chunk` bytes goes out whenever it fills, so a large list costs its own size in memory, not a
/// tree of objects and a whole serialized copy besides.
struct StreamedOutput {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private let chunk: Int
    /// Why a write failed (the first failure's errno), if one did; later writes are skipped.
    private(set) var failure: Int32?

    /// Writes to the file descriptor `fd` (1: standard output, after what `print` buffered).
    init(fd: Int32, chunk: Int = 1 << 16) {
        if fd == 1 { fflush(nil) }
        self.fd = fd
        self.chunk = chunk
        buffer.reserveCapacity(chunk + 1024)
    }

    mutating func write(_ text: String) {
        var t = text
        t.withUTF8 { buffer.append(contentsOf: $0) }
        if buffer.count >= chunk { flush() }
    }

    mutating func write<C: Collection>(bytes: C) where C.Element == UInt8 {
        buffer.append(contentsOf: bytes)
        if buffer.count >= chunk { flush() }
    }

    /// Writes `text` as a JSON string: quotes; `"`, `\` and `/` escaped as JSONSerialization
    /// does; every control character, and every character ``PrintableText/needsEscape(_:)``
    /// names, as `\uXXXX`, so nothing of anyone else's reaches the terminal raw.
    mutating func writeJSONString(_ text: String) {
        Self.appendJSONString(text, to: &buffer)
        if buffer.count >= chunk { flush() }
    }

    /// Appends `text` as a JSON string to `buffer` (see ``writeJSONString(_:)``).
    static func appendJSONString(_ text: String, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        var plain = true
        for s in text.unicodeScalars where s == "\"" || s == "\\" || s == "/" || PrintableText.needsEscape(s) {
            plain = false
            break
        }
        if plain {
            var t = text
            t.withUTF8 { buffer.append(contentsOf: $0) }
        } else {
            for s in text.unicodeScalars {
                switch s {
                case "\"": buffer.append(contentsOf: Array(#"\""#.utf8))
                case "\\": buffer.append(contentsOf: Array(#"\\"#.utf8))
                case "/": buffer.append(contentsOf: Array(#"\/"#.utf8))
                case "\n": buffer.append(contentsOf: Array(#"\n"#.utf8))
                case "\r": buffer.append(contentsOf: Array(#"\r"#.utf8))
                case "\t": buffer.append(contentsOf: Array(#"\t"#.utf8))
                case _ where PrintableText.needsEscape(s):
                    // All such scalars are in the BMP: one \uXXXX each.
                    let hex = String(s.value, radix: 16)
                    buffer.append(contentsOf: Array(("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8))
                default:
                    buffer.append(contentsOf: Array(String(s).utf8))
                }
            }
        }
        buffer.append(UInt8(ascii: "\""))
    }

    /// Writes what is buffered (all of it: short writes and interruptions are continued).
    mutating func flush() {
        defer { buffer.removeAll(keepingCapacity: true) }
        guard failure == nil else { return }
        var done = 0
        while done < buffer.count {
            let n = buffer.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                failure = errno
                return
            }
            done += n
        }
    }
}

/// `show --json`: the document as indented JSON (the shape of ``documentObject(_:_:)``, keys
/// sorted), written as it is made.
///
/// - Complexity: O(n) for n sections and items; memory O(1) beyond the snapshot.
func writeDocumentJSON(_ info: DocumentInfo, _ snapshot: ListSnapshot, to out: inout StreamedOutput) {
    out.write("{\n  \"id\" : ")
    out.writeJSONString(info.id.description)
    out.write(",\n  \"name\" : ")
    out.writeJSONString(info.name)
    out.write(",\n  \"sections\" : [")
    for (s, section) in snapshot.sections.enumerated() {
        out.write(s == 0 ? "\n    {\n      \"id\" : " : ",\n    {\n      \"id\" : ")
        out.writeJSONString("\(section.id)")
        out.write(",\n      \"fields\" : ")
        out.write(fieldsJSON(section.fields))
        out.write(",\n      \"items\" : [")
        for (i, item) in section.items.enumerated() {
            out.write(i == 0 ? "\n        {\n          \"id\" : " : ",\n        {\n          \"id\" : ")
            out.writeJSONString("\(item.id)")
            out.write(",\n          \"fields\" : ")
            out.write(fieldsJSON(item.fields))
            out.write(",\n          \"text\" : ")
            out.writeJSONString(text(item.value))
            out.write("\n        }")
        }
        out.write(section.items.isEmpty ? "]" : "\n      ]")
        out.write(",\n      \"text\" : ")
        out.writeJSONString(text(section.value))
        out.write("\n    }")
    }
    out.write(snapshot.sections.isEmpty ? "]\n}\n" : "\n  ]\n}\n")
    out.flush()
}

/// `{"name" : field, ...}` (``fieldJSON(_:)``); `{}` without fields (no work).
private func fieldsJSON(_ fields: [String: Field]) -> String {
    if fields.isEmpty { return "{}" }
    var t = JSONText()
    t.fields(fields)
    return t.text
}

/// `export`: the export file's JSON object (keys sorted, on one line), its snapshot in base64
/// written in pieces.
///
/// - Complexity: O(b) for b snapshot bytes; memory O(1) beyond them.
func writeExport(name: String, id: DocumentID, snapshot: [UInt8], to out: inout StreamedOutput) {
    out.write("{\"format\":\"listsync-export\",\"id\":")
    out.writeJSONString(id.description)
    out.write(",\"name\":")
    out.writeJSONString(name)
    out.write(",\"snapshot\":\"")
    let piece = 3 * (1 << 14)   // a multiple of 3: the pieces' base64 joins without padding
    var start = 0
    while start < snapshot.count {
        let end = min(snapshot.count, start + piece)
        out.write(Data(snapshot[start..<end]).base64EncodedString())
        start = end
    }
    out.write("\",\"version\":1}")
    out.flush()
}
