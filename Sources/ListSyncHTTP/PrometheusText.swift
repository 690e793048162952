/// A builder of Prometheus text exposition (format 0.0.4) for a `/metrics` endpoint.
///
/// Samples of one metric are grouped under a single `# HELP` and `# TYPE`, in the order the
/// metrics were first added, whatever order their samples come in. Labels are written sorted by
/// name; label values escape `\`, `"` and newline, help text escapes `\` and newline.
///
/// ```swift
/// var m = PrometheusText()
/// m.counter("listsync_connections_total", help: "Connections accepted.", value: 3, labels: ["reason": "x"])
/// let body = m.text   // serve with Content-Type PrometheusText.contentType
/// ```
public struct PrometheusText: Sendable {
    /// The `Content-Type` of the exposition.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private struct Family: Sendable {
        var name: String
        var help: String
        var type: String
        var lines: [String]
    }

    private var families: [Family] = []
    private var index: [String: Int] = [:]

    /// An empty exposition.
    public init() {}

    /// Adds a counter sample.
    ///
    /// - Complexity: O(*l* log *l*) in the number of labels.
    public mutating func counter(_ name: String, help: String, value: Double, labels: [String: String] = [:]) {
        add(name, help: help, type: "counter", lines: [sample(name, labels, value)])
    }

    /// Adds a counter sample (an integer count).
    ///
    /// - Complexity: O(*l* log *l*) in the number of labels.
    public mutating func counter(_ name: String, help: String, value: Int, labels: [String: String] = [:]) {
        counter(name, help: help, value: Double(value), labels: labels)
    }

    /// Adds a gauge sample.
    ///
    /// - Complexity: O(*l* log *l*) in the number of labels.
    public mutating func gauge(_ name: String, help: String, value: Double, labels: [String: String] = [:]) {
        add(name, help: help, type: "gauge", lines: [sample(name, labels, value)])
    }

    /// Adds a gauge sample (an integer).
    ///
    /// - Complexity: O(*l* log *l*) in the number of labels.
    public mutating func gauge(_ name: String, help: String, value: Int, labels: [String: String] = [:]) {
        gauge(name, help: help, value: Double(value), labels: labels)
    }

    /// Adds a histogram: one `_bucket` line per upper bound (cumulative, as the format wants),
    /// a `+Inf` bucket equal to `count`, then `_sum` and `_count`.
    ///
    /// - Parameters:
    ///   - buckets: the upper bounds, ascending, without `+Inf`.
    ///   - counts: observations **per bucket** (not cumulative): `counts[i]` fell in
    ///     (`buckets[i-1]`, `buckets[i]`]; as many as `buckets`. Observations above the last
    ///     bound are `count` minus their sum.
    ///   - sum: the sum of all observations.
    ///   - count: the number of all observations.
    /// - Complexity: O(*b* + *l* log *l*) in the number of buckets and labels.
    public mutating func histogram(_ name: String, help: String, buckets: [Double], counts: [Int],
                                   sum: Double, count: Int, labels: [String: String] = [:]) {
        precondition(buckets.count == counts.count, "histogram \(name): \(buckets.count) bounds, \(counts.count) counts")
        precondition(zip(buckets, buckets.dropFirst()).allSatisfy { $0 < $1 }, "histogram \(name): bounds not ascending")
        precondition(labels["le"] == nil, "histogram \(name): the label `le` is reserved")
        var lines: [String] = []
        var cumulative = 0
        for (bound, n) in zip(buckets, counts) {
            cumulative += n
            lines.append(sample(name + "_bucket", labels, Double(cumulative), le: Self.format(bound)))
        }
        lines.append(sample(name + "_bucket", labels, Double(count), le: "+Inf"))
        lines.append(sample(name + "_sum", labels, sum))
        lines.append(sample(name + "_count", labels, Double(count)))
        add(name, help: help, type: "histogram", lines: lines)
    }

    /// The exposition text, ending in a newline (empty when nothing was added).
    ///
    /// - Complexity: O(*n*) in the size of the text.
    public var text: String {
        var out = ""
        for f in families {
            out += "# HELP \(f.name) \(Self.escapeHelp(f.help))\n"
            out += "# TYPE \(f.name) \(f.type)\n"
            for l in f.lines { out += l + "\n" }
        }
        return out
    }

    // MARK: Internals

    private mutating func add(_ name: String, help: String, type: String, lines: [String]) {
        precondition(Self.isValidName(name, colon: true), "invalid metric name \(name)")
        if let i = index[name] {
            precondition(families[i].type == type, "metric \(name) added as \(families[i].type) and as \(type)")
            families[i].lines += lines
        } else {
            index[name] = families.count
            families.append(Family(name: name, help: help, type: type, lines: lines))
        }
    }

    private func sample(_ name: String, _ labels: [String: String], _ value: Double, le: String? = nil) -> String {
        var pairs = labels.sorted { $0.key < $1.key }.map { key, value -> String in
            precondition(Self.isValidName(key, colon: false) && !key.hasPrefix("__"), "invalid label name \(key)")
            return "\(key)=\"\(Self.escapeLabel(value))\""
        }
        if let le { pairs.append("le=\"\(le)\"") }
        let labelText = pairs.isEmpty ? "" : "{" + pairs.joined(separator: ",") + "}"
        return "\(name)\(labelText) \(Self.format(value))"
    }

    /// A number as the format writes it: integers without a fraction, `NaN`, `+Inf`, `-Inf`.
    static func format(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded(), abs(v) < 9_007_199_254_740_992 { return String(Int64(v)) }
        return "\(v)"
    }

    static func escapeLabel(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    static func escapeHelp(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*` for metric names; without `:` for label names.
    static func isValidName(_ s: String, colon: Bool) -> Bool {
        guard let first = s.unicodeScalars.first else { return false }
        func ok(_ c: Unicode.Scalar, digit: Bool) -> Bool {
            (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c == "_" || (colon && c == ":")
                || (digit && c >= "0" && c <= "9")
        }
        return ok(first, digit: false) && s.unicodeScalars.dropFirst().allSatisfy { ok($0, digit: true) }
    }
}
