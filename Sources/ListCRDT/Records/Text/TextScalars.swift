/// The characters of a text field by local version, one Unicode scalar each: one byte per
/// character while every character is ASCII (most texts: notes, titles, code), four bytes per
/// character from the first one that is not on (the whole text is widened once then).
///
/// Four bytes for every character were a third of a replica's memory for a board of pasted
/// notes (issue 45's W17.notes); a paste of ASCII is now one copy of its UTF-8.
struct TextScalars: Sendable {
    /// The characters while all are ASCII (empty once wide).
    private var narrow: [UInt8] = []
    /// The characters once one is not ASCII (empty before).
    private var wide: [Unicode.Scalar] = []
    /// Whether the characters are in `wide`.
    private(set) var isWide = false

    /// An empty text.
    init() {}

    /// The scalars of `text`.
    ///
    /// - Complexity: O(b) for b bytes of UTF-8.
    init(_ text: String) { append(contentsOf: text) }

    /// The number of characters.
    var count: Int { isWide ? wide.count : narrow.count }

    /// Character `i` (`0 ..< count`).
    @inline(__always) subscript(i: Int) -> Unicode.Scalar { isWide ? wide[i] : Unicode.Scalar(narrow[i]) }

    /// Appends one character.
    ///
    /// - Complexity: O(1) amortized; O(n) the first time a character is not ASCII.
    @inline(__always)
    mutating func append(_ scalar: Unicode.Scalar) {
        if !isWide {
            if scalar.isASCII {
                narrow.append(UInt8(truncatingIfNeeded: scalar.value))
                return
            }
            widen(room: 1)
        }
        wide.append(scalar)
    }

    /// Appends the Unicode scalars of `text` and returns how many: its ASCII prefix (found eight
    /// bytes at a time) copied as it is, or widened in place when the text is wide, and the rest
    /// decoded. Room grows geometrically, as `append` grows it.
    ///
    /// - Complexity: O(b) for b bytes of UTF-8 (plus O(n) the first time a character is not ASCII).
    @discardableResult
    mutating func append(contentsOf text: String) -> Int {
        var text = text
        return text.withUTF8 { bytes -> Int in
            let ascii = Self.asciiPrefix(bytes)
            if !isWide {
                narrow.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[..<ascii]))
                guard ascii < bytes.count else { return ascii }
                widen(room: bytes.count - ascii)
            } else {
                let needed = wide.count + bytes.count
                if wide.capacity < needed { wide.reserveCapacity(Swift.max(needed, wide.capacity * 2)) }
                // Room made at once, then each byte widened in place (about 5 instructions a byte;
                // appending a lazy map cost 19).
                let start = wide.count
                wide.append(contentsOf: repeatElement(Unicode.Scalar(0), count: ascii))
                wide.withUnsafeMutableBufferPointer { out in
                    for j in 0 ..< ascii { out[start + j] = Unicode.Scalar(bytes[j]) }
                }
                guard ascii < bytes.count else { return ascii }
            }
            let before = wide.count
            var rest = bytes[ascii...].makeIterator()
            var decoder = Unicode.UTF8()
            while true {
                switch decoder.decode(&rest) {
                case .scalarValue(let s): wide.append(s)
                case .emptyInput: return ascii + wide.count - before
                case .error: preconditionFailure("a String's UTF-8 decodes")
                }
            }
        }
    }

    /// The length of the ASCII prefix of `bytes`, eight bytes at a time, then byte by byte.
    @inline(__always)
    private static func asciiPrefix(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var i = 0
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while i + 8 <= bytes.count, raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 { i += 8 }
        }
        while i < bytes.count, bytes[i] < 0x80 { i += 1 }
        return i
    }

    /// Moves the characters to `wide`, with room for `room` more.
    private mutating func widen(room: Int) {
        assert(!isWide, "widened twice")
        var all: [Unicode.Scalar] = []
        all.reserveCapacity(Swift.max(narrow.count + room, narrow.capacity))
        for b in narrow { all.append(Unicode.Scalar(b)) }
        wide = all
        narrow = []
        isWide = true
    }

    /// Appends the UTF-8 of characters `range` to `out`.
    ///
    /// - Complexity: O(range.count).
    func appendUTF8(_ range: Range<Int>, to out: inout [UInt8]) {
        if !isWide {
            out.append(contentsOf: narrow[range])
        } else {
            for s in wide[range] { UTF8.encode(s) { out.append($0) } }
        }
    }

    /// The characters of `range` as a string.
    ///
    /// - Complexity: O(range.count).
    func string(_ range: Range<Int>) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(range.count)
        appendUTF8(range, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether characters `range` are the Unicode scalars of `text`, in order.
    ///
    /// - Complexity: O(range.count).
    func matches(_ range: Range<Int>, _ text: String) -> Bool {
        if !isWide {
            return narrow[range].elementsEqual(text.utf8)
        }
        return wide[range].elementsEqual(text.unicodeScalars)
    }

    /// Makes room for `n` characters in all.
    mutating func reserveCapacity(_ n: Int) {
        if isWide { wide.reserveCapacity(n) } else { narrow.reserveCapacity(n) }
    }

    /// Heap bytes held.
    var heapBytes: Int { narrow.capacity + wide.capacity * MemoryLayout<Unicode.Scalar>.stride }

    /// The address of the characters' storage (for tests: an edit in place keeps it).
    var storageAddress: UnsafeRawPointer? {
        isWide ? wide.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
            : narrow.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }
}
