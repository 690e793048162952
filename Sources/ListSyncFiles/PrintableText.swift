/// Text that others chose (document names, section and item texts, errors that quote them) made
/// safe to print on a terminal or in a log line (Docs/Security.md, "Output").
///
/// A name with a newline could forge a log line; one with `ESC [` could move the cursor, recolour
/// or retitle the terminal. The daemon's log and every `listsync` command print such text through
/// ``escaped(_:)`` (text) or ``escapedJSON(_:)`` (JSON), so what reaches the terminal carries no
/// control character of anyone else's.
public enum PrintableText {
    /// Whether `scalar` is written as an escape: the C0 controls (U+0000–U+001F), DEL, the C1
    /// controls (U+0080–U+009F, which some terminals obey like `ESC` sequences), the line and
    /// paragraph separators (U+2028, U+2029) and the bidirectional controls (U+061C, U+200E,
    /// U+200F, U+202A–U+202E, U+2066–U+2069), which reorder what is shown.
    public static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// `text` with each character of ``needsEscape(_:)`` written as a Swift escape (`\n`, `\r`,
    /// `\t`, `\0`, else `\u{1B}`), and each backslash as `\\`, so that the printed form is one
    /// line and says exactly what the text holds. Text with neither is returned as it is.
    ///
    /// - Complexity: O(n).
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 == "\\" || needsEscape($0) }) else { return text }
        var out = String.UnicodeScalarView()
        for s in text.unicodeScalars {
            switch s {
            case "\\": out.append(contentsOf: #"\\"#.unicodeScalars)
            case "\n": out.append(contentsOf: #"\n"#.unicodeScalars)
            case "\r": out.append(contentsOf: #"\r"#.unicodeScalars)
            case "\t": out.append(contentsOf: #"\t"#.unicodeScalars)
            case "\0": out.append(contentsOf: #"\0"#.unicodeScalars)
            case _ where needsEscape(s):
                out.append(contentsOf: "\\u{\(String(s.value, radix: 16, uppercase: true))}".unicodeScalars)
            default: out.append(s)
            }
        }
        return String(out)
    }

    /// JSON text as `JSONSerialization` writes it (C0 controls inside strings escaped already;
    /// outside them, the newlines and tabs of pretty printing) with the other characters of
    /// ``needsEscape(_:)`` written as `\uXXXX`. Those never occur outside strings, so only string
    /// contents change, and they decode to the same values.
    ///
    /// - Complexity: O(n).
    public static func escapedJSON(_ json: String) -> String {
        let escapes: (Unicode.Scalar) -> Bool = { $0.value >= 0x20 && needsEscape($0) }
        guard json.unicodeScalars.contains(where: escapes) else { return json }
        var out = String.UnicodeScalarView()
        for s in json.unicodeScalars {
            if escapes(s) {
                let hex = String(s.value, radix: 16)
                out.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).unicodeScalars)
            } else {
                out.append(s)
            }
        }
        return String(out)
    }
}
