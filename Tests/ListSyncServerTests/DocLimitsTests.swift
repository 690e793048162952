import Foundation
import ListCRDT
import ListSync
import ListSyncServer
import ListSyncTCP
import ListSyncTestTraits
import Testing

/// The limits and defaults the docs state, checked against the constants the code uses: a
/// default changed in the code and not on the page (or the other way) fails here.
@Suite("Doc limits and defaults match the code", .ownThread)
struct DocLimitsTests {
    /// A page of the repository.
    static func page(_ path: String) throws -> String {
        try String(contentsOf: DocSampleTests.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The rows of the first table under `heading` on `page`: first column → second column.
    static func table(_ page: String, under heading: String) throws -> [String: String] {
        let text = try Self.page(page)
        guard let start = text.range(of: "\n" + heading + "\n") else { throw DaemonTestError("\(page) has no \(heading)") }
        var rows: [String: String] = [:]
        var inTable = false
        for line in text[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("|") {
                inTable = true
                let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
                if cells.count > 2 { rows[cells[1]] = cells[2] }
            } else if inTable {
                break
            }
        }
        return rows
    }

    /// `n` as the docs write it: 1,024.
    static func grouped(_ n: Int) -> String {
        let f = NumberFormatter()
        f.numberStyle = .decimal
        f.groupingSeparator = ","
        f.usesGroupingSeparator = true
        return f.string(from: NSNumber(value: n))!
    }

    static func seconds(_ d: Duration) -> String {
        let s = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        return s == s.rounded() ? "\(Int(s)) s" : "\(s) s"
    }

    static func bytes(_ n: Int) -> String {
        if n % (1 << 20) == 0 { return "\(n >> 20) MiB" }
        if n % 1024 == 0 { return "\(n >> 10) KiB" }
        return "\(n) B"
    }

    /// Each row `what` of `rows` starts with its value.
    static func expect(_ rows: [String: String], start expected: [(String, String)], on page: String) throws {
        for (what, value) in expected {
            let row = try #require(rows[what], "\(page)'s limits have no row \"\(what)\" (rows: \(rows.keys.sorted()))")
            #expect(row.hasPrefix(value), "\(page), \(what): \"\(row)\", the code's default is \(value)")
        }
    }

    @Test("Docs/Daemon.md, \"Limits\": every default is the code's")
    func daemonLimits() throws {
        let rows = try Self.table("Docs/Daemon.md", under: "## Limits")
        let tcp = TCPOptions(), config = DaemonConfiguration(dataFolder: "/unused")
        let expected: [(String, String)] = [
            ("connections (authenticated)", Self.grouped(tcp.maxConnections)),
            ("connections in their handshake", "\(tcp.maxUnauthenticated)"),
            ("authenticated connections per address", "\(tcp.maxPerAddress)"),
            ("handshake deadline", Self.seconds(tcp.handshakeTimeout)),
            ("idle", "PING after \(Self.seconds(tcp.pingInterval)), close after \(Self.seconds(tcp.idleTimeout))"),
            ("frame", "\(Self.bytes(tcp.frameLimit)) (\(Self.bytes(tcp.handshakeFrameLimit)) before the handshake)"),
            ("send queue per connection", Self.bytes(tcp.sendQueueLimit)),
            ("resident documents", Self.grouped(config.maxResidentDocuments)),
            ("idle unload", Self.seconds(config.idleUnload)),
            ("documents in the data folder", Self.grouped(config.maxDocuments)),
            ("values", Self.bytes(ListDocument.defaultMaxValueSize)),
            ("causal buffer per document", "\(Self.grouped(config.pendingLimits.maxOperations)) operations / \(Self.bytes(config.pendingLimits.maxBytes))"),
            ("batches per connection", "\(Self.grouped(Int(RateLimit.standard.rate))) a second, bursts of \(Self.grouped(Int(RateLimit.standard.burst)))"),
        ]
        try Self.expect(rows, start: expected, on: "Docs/Daemon.md")
    }

    @Test("Docs/Transport.md, \"Limits\": every default is TCPOptions'")
    func transportLimits() throws {
        let rows = try Self.table("Docs/Transport.md", under: "## Limits (`TCPOptions`, defaults)")
        let tcp = TCPOptions()
        let expected: [(String, String)] = [
            ("frame before / after the handshake", "\(Self.bytes(tcp.handshakeFrameLimit))"),
            ("handshake deadline", Self.seconds(tcp.handshakeTimeout)),
            ("idle", "PING after \(Self.seconds(tcp.pingInterval)) of silence, close after \(Self.seconds(tcp.idleTimeout))"),
            ("send queue per connection", Self.bytes(tcp.sendQueueLimit)),
            ("connections per listener", Self.grouped(tcp.maxConnections)),
            ("connections in their handshake (the pool)", "\(tcp.maxUnauthenticated)"),
            ("authenticated connections per address", "\(tcp.maxPerAddress)"),
        ]
        try Self.expect(rows, start: expected, on: "Docs/Transport.md")
        #expect(rows["frame before / after the handshake"]?.hasSuffix("/ \(Self.bytes(tcp.frameLimit))") == true)
    }

    @Test("Docs/Daemon.md, \"Flags and environment\": every default is the configuration's")
    func daemonFlags() throws {
        // The third column is the default (the second is the environment variable).
        let text = try Self.page("Docs/Daemon.md")
        var defaults: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `--") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            if cells.count > 3 { defaults[cells[1]] = cells[3] }
        }
        #expect(defaults.count > 20, "the flags table is read")
        let config = DaemonConfiguration(dataFolder: "/unused"), policy = CompactionPolicy()
        let cluster = ClusterConfiguration(servers: [])
        let rate = RateLimit.standard
        let expected: [(String, String)] = [
            ("`--listen HOST:PORT`", "`\(config.listenHost):\(DaemonConfiguration.defaultPort)`"),
            ("`--max-connections N`", "\(config.tcp.maxConnections)"),
            ("`--idle-unload SECONDS`", "\(config.idleUnload.components.seconds)"),
            ("`--retire-after DURATION`", "\(policy.retireAfter.components.seconds / 86_400)d"),
            ("`--compact-after N`", "\(policy.minOperations)"),
            ("`--compact-interval S`", "\(policy.interval.components.seconds)"),
            ("`--compact-dead-share F`", "\(policy.reclaimableShare ?? 0)"),
            ("`--compact-dead-floor B`", "\(policy.reclaimableFloor / 1024)K"),
            ("`--rate-limit N[/BURST]`", "\(Int(rate.rate))/\(Int(rate.burst))"),
            ("`--discover-port PORT`", "\(DaemonConfiguration.Discovery().port)"),
            ("`--announce-interval S`", "\(DaemonConfiguration.Discovery().interval.components.seconds)"),
            ("`--cluster-replicas N`", "\(cluster.replicas)"),
            ("`--cluster-trim N`", "\(cluster.trimMessages)"),
            ("`--cluster-lease S`", "\(cluster.leaseDuration.components.seconds)"),
            ("`--cluster-grace S`", "\(cluster.interestGrace.components.seconds)"),
        ]
        for (flag, value) in expected {
            let row = try #require(defaults[flag], "Docs/Daemon.md's flags have no row \(flag)")
            #expect(row == value, "Docs/Daemon.md, \(flag): default \"\(row)\", the code's is \(value)")
        }
    }

    @Test("the default port: the pages name DaemonConfiguration.defaultPort, and no other port as the daemon's")
    func defaultPort() throws {
        let port = DaemonConfiguration.defaultPort
        let discovery = DaemonConfiguration.Discovery().port
        #expect(try Self.page("README.md").contains("127.0.0.1:\(port)"))
        #expect(try Self.page("Docs/Daemon.md").contains("listens on `127.0.0.1:\(port)`"))
        // The tool repeats the port for its help (no daemon needed): the same one.
        let (code, help, _) = try runListsync(["serve", "--help"], stdin: FileHandle.nullDevice)
        #expect(code == 0 && help.contains("listens on 127.0.0.1:\(port)"), "\(help)")
        // Every daemon address of the samples and commands: a port in 7400-7499 is the daemon's,
        // discovery's, or the web view's example (7460).
        for page in try DocSampleTests.pages() {
            let text = try Self.page(page)
            let regex = try NSRegularExpression(pattern: #"\b(74[0-9]{2})\b"#)
            for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let n = UInt16(String(text[Range(match.range(at: 1), in: text)!]))!
                #expect([port, discovery, 7460].contains(n), "\(page) names port \(n): the daemon's default is \(port)")
            }
        }
    }
}
