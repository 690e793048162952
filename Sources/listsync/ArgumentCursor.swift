/// Reads a command's arguments one at a time, with the values of `--name value` options checked
/// where they are read (the `simulate` modes' parsing).
struct ArgumentCursor {
    let args: [String]
    private var i = 0

    init(_ args: [String]) { self.args = args }

    /// The argument under the cursor; nil past the end.
    var current: String? { i < args.count ? args[i] : nil }

    /// Moves to the next argument.
    mutating func advance() { i += 1 }

    /// The value after option `name`.
    ///
    /// - Throws: ``UsageError`` when there is none.
    mutating func value(_ name: String) throws -> String {
        i += 1
        guard i < args.count else { throw UsageError(message: "\(name) needs a value") }
        return args[i]
    }

    /// The whole number after option `name`, within `range`.
    ///
    /// - Throws: ``UsageError`` saying what was wrong.
    mutating func number<T: FixedWidthInteger>(_ name: String, _ range: ClosedRange<T>) throws -> T {
        let text = try value(name)
        guard let n = T(text), range.contains(n) else {
            throw UsageError(message: "\(name) must be a whole number in \(range.lowerBound)...\(range.upperBound), not '\(text)'")
        }
        return n
    }
}
