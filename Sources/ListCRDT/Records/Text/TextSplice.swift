import Foundation

/// One splice of a text: remove `delete` characters at `at`, then insert `insert` there. Positions
/// count Unicode scalars (Docs/Semantics.md §8.10); ``TextPositions`` converts from and to UTF-16
/// offsets, `NSRange` and `String.Index`.
public struct TextSplice: Hashable, Sendable, CustomStringConvertible {
    /// Where the splice starts.
    public var at: Int
    /// How many characters it removes from there.
    public var delete: Int
    /// What it inserts there.
    public var insert: String

    /// Makes a splice.
    public init(at: Int, delete: Int, insert: String) {
        self.at = at
        self.delete = delete
        self.insert = insert
    }

    /// The change as a field change (``FieldChange/splice(at:delete:insert:)``).
    public var change: FieldChange { .splice(at: at, delete: delete, insert: insert) }

    /// Whether it changes nothing.
    public var isEmpty: Bool { delete == 0 && insert.isEmpty }

    /// The smallest splice that turns `old` into `new` (what a text view's delegate gives: the
    /// text before and after a keystroke, a paste or an autocorrection): the common prefix and
    /// then the common suffix of the rest are kept, the middle is replaced. Nil when they are
    /// equal. A keystroke gives an insert of one character, a backspace a removal of one.
    ///
    /// - Complexity: O(n) for n scalars of the longer text.
    public static func between(old: String, new: String) -> TextSplice? {
        let a = Array(old.unicodeScalars), b = Array(new.unicodeScalars)
        let (p, s) = commonEnds(a, b)
        if p == a.count && p == b.count { return nil }
        var inserted = String.UnicodeScalarView()
        inserted.append(contentsOf: b[p ..< b.count - s])
        return TextSplice(at: p, delete: a.count - s - p, insert: String(inserted))
    }

    /// The lengths of the common prefix of `a` and `b`, and of the common suffix of what follows it.
    ///
    /// - Complexity: O(n) for n scalars of the longer one.
    static func commonEnds(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> (prefix: Int, suffix: Int) {
        var p = 0
        while p < a.count, p < b.count, a[p] == b[p] { p += 1 }
        var s = 0
        while s < a.count - p, s < b.count - p, a[a.count - 1 - s] == b[b.count - 1 - s] { s += 1 }
        return (p, s)
    }

    /// `text` with this splice made (positions clamped to the text).
    ///
    /// - Complexity: O(n).
    public func applied(to text: String) -> String {
        var scalars = Array(text.unicodeScalars)
        let lo = min(max(at, 0), scalars.count), hi = min(lo + max(delete, 0), scalars.count)
        scalars.replaceSubrange(lo ..< hi, with: insert.unicodeScalars)
        var out = String.UnicodeScalarView()
        out.append(contentsOf: scalars)
        return String(out)
    }

    public var description: String { "splice(at: \(at), delete: \(delete), insert: \(insert.debugDescription))" }
}

/// Conversions between the positions a text field counts (Unicode scalars) and those of
/// UIKit/AppKit (UTF-16 offsets, `NSRange`) and Swift (`String.Index`). Every conversion reads the
/// text from its start: O(n) for n scalars up to the position.
public enum TextPositions {
    /// The scalar position of UTF-16 offset `utf16` in `text`, or nil when it is out of range or
    /// splits a surrogate pair (a position inside a character, which no caret takes).
    public static func scalarOffset(ofUTF16 utf16: Int, in text: String) -> Int? {
        guard utf16 >= 0 else { return nil }
        var u = 0, k = 0
        for s in text.unicodeScalars {
            if u == utf16 { return k }
            if u > utf16 { return nil }
            u += s.utf16.count
            k += 1
        }
        return u == utf16 ? k : nil
    }

    /// The UTF-16 offset of scalar position `scalar` in `text`, or nil when out of range.
    public static func utf16Offset(ofScalar scalar: Int, in text: String) -> Int? {
        guard scalar >= 0 else { return nil }
        var u = 0, k = 0
        for s in text.unicodeScalars {
            if k == scalar { return u }
            u += s.utf16.count
            k += 1
        }
        return k == scalar ? u : nil
    }

    /// The scalar range of an `NSRange` of `text` (UTF-16), or nil when it is out of range or
    /// splits a surrogate pair.
    public static func scalarRange(of range: NSRange, in text: String) -> Range<Int>? {
        guard range.location != NSNotFound, let lo = scalarOffset(ofUTF16: range.location, in: text),
              let hi = scalarOffset(ofUTF16: range.location + range.length, in: text) else { return nil }
        return lo ..< hi
    }

    /// The `NSRange` (UTF-16) of a scalar range of `text`, or nil when out of range.
    public static func nsRange(ofScalars range: Range<Int>, in text: String) -> NSRange? {
        guard let lo = utf16Offset(ofScalar: range.lowerBound, in: text),
              let hi = utf16Offset(ofScalar: range.upperBound, in: text) else { return nil }
        return NSRange(location: lo, length: hi - lo)
    }

    /// The scalar position of `index` in `text` (an index inside a scalar counts as the scalar
    /// it is in).
    public static func scalarOffset(of index: String.Index, in text: String) -> Int {
        text.unicodeScalars.distance(from: text.unicodeScalars.startIndex, to: index.samePosition(in: text.unicodeScalars) ?? index)
    }

    /// The `String.Index` of scalar position `scalar` in `text`, or nil when out of range.
    public static func index(ofScalar scalar: Int, in text: String) -> String.Index? {
        let v = text.unicodeScalars
        return v.index(v.startIndex, offsetBy: scalar, limitedBy: v.endIndex)
    }

    /// The splice that replaces `range` (UTF-16, as `textView(_:shouldChangeTextIn:replacementText:)`
    /// gives it) of `text` with `replacement`, in scalars; nil when the range is out of bounds or
    /// splits a surrogate pair.
    public static func splice(replacing range: NSRange, in text: String, with replacement: String) -> TextSplice? {
        guard let r = scalarRange(of: range, in: text) else { return nil }
        return TextSplice(at: r.lowerBound, delete: r.count, insert: replacement)
    }
}
