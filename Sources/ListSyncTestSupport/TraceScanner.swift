/// A cursor over the bytes of a JSON Lines trace, for the subset the traces use: non-negative
/// integers, arrays, and strings with the escapes `\" \\ \/ \n \t \r \b \f \uXXXX` (ASCII
/// content). Shared by ``EditingTrace`` and ``ConcurrentTrace``; each makes its own error type.
struct TraceScanner<Failure: Error> {
    var bytes: [UInt8]
    var i = 0
    /// The line being read (1-based), for errors.
    var line = 1
    let makeError: (_ line: Int, _ reason: String) -> Failure

    init(bytes: [UInt8], makeError: @escaping (_ line: Int, _ reason: String) -> Failure) {
        self.bytes = bytes
        self.makeError = makeError
    }

    func fail(_ why: String) -> Failure { makeError(line, why) }

    mutating func skipSpaces() { while i < bytes.count, bytes[i] == 0x20 { i += 1 } }

    mutating func expect(_ c: UInt8) throws(Failure) {
        skipSpaces()
        guard i < bytes.count, bytes[i] == c else {
            throw fail("expected '\(Character(UnicodeScalar(c)))'")
        }
        i += 1
    }

    mutating func integer() throws(Failure) -> Int {
        skipSpaces()
        var n = 0, digits = 0
        while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 {
            guard digits < 18 else { throw fail("number too large") }
            n = n * 10 + Int(bytes[i] - 0x30)
            i += 1
            digits += 1
        }
        if digits == 0 { throw fail("expected a number") }
        return n
    }

    /// Reads the `[` of an array; false if the array is empty (its `]` read too).
    mutating func openList() throws(Failure) -> Bool {
        try expect(0x5B)
        skipSpaces()
        if i < bytes.count, bytes[i] == 0x5D {
            i += 1
            return false
        }
        return true
    }

    /// After an element of an array: reads `,` (true: another element follows) or `]` (false).
    mutating func nextElement() throws(Failure) -> Bool {
        skipSpaces()
        guard i < bytes.count, bytes[i] != 0x0A else { throw fail("unterminated array") }
        let c = bytes[i]
        i += 1
        if c == 0x5D { return false }
        guard c == 0x2C else { throw fail("expected ',' or ']'") }
        return true
    }

    /// One edit, `[position, deleteCount, "text"]`.
    mutating func edit() throws(Failure) -> (position: Int, deleteCount: Int, text: [UInt8]) {
        try expect(0x5B)
        let position = try integer()
        try expect(0x2C)
        let deleteCount = try integer()
        try expect(0x2C)
        let text = try string()
        try expect(0x5D)
        return (position, deleteCount, text)
    }

    mutating func string() throws(Failure) -> [UInt8] {
        try expect(0x22)
        var out: [UInt8] = []
        while true {
            guard i < bytes.count, bytes[i] != 0x0A else { throw fail("unterminated string") }
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
                guard i + 4 <= bytes.count,
                      let v = UInt32(String(decoding: bytes[i..<(i + 4)], as: UTF8.self), radix: 16),
                      let scalar = UnicodeScalar(v) else { throw fail("bad \\u escape") }
                out.append(contentsOf: Array(String(Character(scalar)).utf8))
                i += 4
            default: throw fail("bad escape")
            }
        }
    }
}
