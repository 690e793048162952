import ListCRDT
import ListSync
import Foundation
import ListSyncServer
import ListSyncFiles
import ListStore
import ListSyncTCP
import ListSyncWeb
import ListSyncNATS
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let serveUsage = """
    USAGE: listsync serve [options]

    Runs the peer daemon. With no flags it creates its data folder (~/.listsync) and a key file in
    it on first start, listens on 127.0.0.1:\(defaultPort), and keeps every document on disk across
    restarts. Every operation is on disk (fdatasync) before it is acknowledged or forwarded.
    SIGTERM or SIGINT: stop accepting, finish, flush, exit 0.

    OPTIONS (each also read from the environment variable shown):
      --data DIR              data folder (LISTSYNC_DATA; default ~/.listsync)
      --listen HOST:PORT      where to listen (LISTSYNC_LISTEN; default 127.0.0.1:\(defaultPort))
      --key-file FILE         use this key instead of DIR/key (LISTSYNC_KEY_FILE); daemons that peer
                              and their clients share one key by copying this file (mode 0600)
      --peer HOST:PORT        keep a connection to another daemon and sync every document both hold;
                              repeatable (LISTSYNC_PEERS, comma-separated)
      --admin HOST:PORT       serve /healthz, /readyz and Prometheus /metrics over HTTP there
                              (LISTSYNC_ADMIN; off unless given). On loopback it is open; on any
                              other address every path but /healthz needs
                              `Authorization: Bearer TOKEN`, the token in DIR/admin-token
                              (created on first start, mode 0600) unless --admin-token-file
      --admin-token-file FILE the admin token (one line, 16-512 characters, mode 0600); with it
                              the token is asked for on loopback too (LISTSYNC_ADMIN_TOKEN_FILE)
      --web [HOST:]PORT       serve the web view there (LISTSYNC_WEB_LISTEN; off unless given; HOST
                              127.0.0.1 unless given): the lists live in a browser, with drag and
                              drop; `listsync open [DOC]` prints a one-time login link (Docs/Web.md)
      --discover              find peers on the LAN: announce over UDP (authenticated with the key,
                              a random instance id) and connect to daemons heard (LISTSYNC_DISCOVER=1)
      --discover-port PORT    UDP port of discovery (LISTSYNC_DISCOVER_PORT; 7451)
      --announce-to HOST:PORT where announcements go; repeatable (LISTSYNC_ANNOUNCE_TO; default the
                              broadcast address 255.255.255.255 on the discovery port)
      --announce-interval S   seconds between announcements (LISTSYNC_ANNOUNCE_INTERVAL; 30)
      --announce-address HOST the address peers are told to dial (LISTSYNC_ANNOUNCE_ADDRESS;
                              default the --listen address, or the first interface address that
                              is not loopback when listening on 0.0.0.0); announcements are
                              authenticated with the key, name this address and port, and are
                              ignored when replayed, older or newer than 30 s, or our own
      --max-connections N     authenticated connections at most (LISTSYNC_MAX_CONNECTIONS; 1024)
      --idle-unload SECONDS   unload a document nobody uses after this long (LISTSYNC_IDLE_UNLOAD; 300)
      --retire-after DURATION a sender of a document not heard of for this long (a device lost in a
                              drawer) no longer holds its compaction back; if it comes back behind
                              the floor it re-syncs from a snapshot and makes its unsent edits
                              again (LISTSYNC_RETIRE_AFTER; 30d; N with s, m, h or d; 0 = at once).
                              With peer daemons, none compacts until every one has seen the
                              retirement
      --compact-after N       compact a document once N operations were logged since its last
                              compaction and every sender has seen all of them, and, with peers,
                              once every peer daemon says so too (LISTSYNC_COMPACT_AFTER; 10000;
                              0 = never compact). Off with --cluster
      --compact-quiescent-only
                              compact only at a quiet moment, never a busy document at the
                              stable prefix its senders acknowledged (by default a document with
                              no peer is compacted at that prefix too: Docs/Semantics.md §7;
                              --compact-stable-prefix says the default)
      --compact-interval S    seconds between two compactions of one document at least
                              (LISTSYNC_COMPACT_INTERVAL; 60); an eighth of it while the
                              document holds four times --compact-after operations
      --compact-dead-share F  also compact, as above, once the bytes a compaction would free
                              (deleted items' values, overwritten and removed fields, deleted
                              text, the log: `reclaimable_bytes` in status) reach this share of
                              the document's bytes, a fraction from 0 to 1 or a percentage
                              (LISTSYNC_COMPACT_DEAD_SHARE; 0.5; off = only --compact-after)
      --compact-dead-floor B  ... and at least this many bytes (LISTSYNC_COMPACT_DEAD_FLOOR;
                              64K; a number of bytes, or with K, M or G: KiB, MiB, GiB)
      --forget-peer ID        a peer daemon gone for good (its replica id, as `listsync status`
                              names it in compaction_waits_for: r123): it no longer holds
                              compaction back, here and, once told, on every other daemon; its
                              edits no other daemon received are lost to them (repeatable;
                              LISTSYNC_FORGET_PEERS, comma-separated)
      --rate-limit N[/BURST]  batches of operations a connection may send a second, and at once;
                              over it a batch is refused with a reason (LISTSYNC_RATE_LIMIT;
                              1000/5000; 0 = no limit)
      --log-format text|json  one line per event on standard error (LISTSYNC_LOG_FORMAT; text)
      --storage shared|per-document
                              shared: one write-ahead log for every document, DIR/wal (the
                              default); per-document: a log in each document's folder, as before
                              it (for comparisons; a folder with DIR/wal keeps it) (LISTSYNC_STORAGE)
      --cluster nats://HOST:PORT[,…]
                              cluster mode (LISTSYNC_CLUSTER; Docs/Cluster.md): share documents
                              with the other nodes through these NATS JetStream servers; nodes
                              share the key file
      --ack local|cluster     in cluster mode, acknowledge a batch after the local fsync (local) or
                              also after JetStream stored it (cluster, the default; LISTSYNC_ACK)
      --cluster-replicas N    the stream's and bucket's replicas when this node creates them
                              (LISTSYNC_CLUSTER_REPLICAS; 1; 3 for a cluster of three NATS servers)
      --cluster-trim N        snapshot a document into the cluster and trim its subject once the
                              subject holds N messages (LISTSYNC_CLUSTER_TRIM; 10000; 0 = never)
      --cluster-lease S       seconds a trim lease lasts unrenewed (LISTSYNC_CLUSTER_LEASE; 15)
      --cluster-grace S       seconds a node keeps reading a document after its last subscriber
                              left (LISTSYNC_CLUSTER_GRACE; 30)
      -h, --help              show this help
    """

func runServe(_ args: [String]) throws -> Int32 {
    let o = try Options(args, values: ["--data", "--listen", "--key-file", "--peer", "--admin", "--web", "--admin-token-file", "--max-connections", "--idle-unload",
                                       "--retire-after", "--compact-after", "--compact-interval", "--compact-dead-share",
                                       "--compact-dead-floor", "--forget-peer",
                                       "--rate-limit", "--log-format", "--storage", "--discover-port", "--announce-to", "--announce-interval", "--announce-address",
                                       "--cluster", "--ack", "--cluster-replicas", "--cluster-trim", "--cluster-lease", "--cluster-grace"],
                        flags: ["--help", "--discover", "--compact-stable-prefix", "--compact-quiescent-only"])
    if o.has("--help") { print(serveUsage); return 0 }
    guard o.positional.isEmpty else { throw UsageError(message: "unexpected argument '\(o.positional[0])'") }
    var config = DaemonConfiguration(dataFolder: o.value("--data", env: "LISTSYNC_DATA") ?? defaultDataFolder())
    if let listen = o.value("--listen", env: "LISTSYNC_LISTEN") {
        (config.listenHost, config.listenPort) = try parseAddress(listen, what: "--listen")
    }
    config.keyFile = o.value("--key-file", env: "LISTSYNC_KEY_FILE")
    for p in o.all("--peer", env: "LISTSYNC_PEERS") {
        let (h, port) = try parseAddress(p, what: "--peer")
        config.peers.append((h, port))
    }
    if let admin = o.value("--admin", env: "LISTSYNC_ADMIN") {
        let (h, p) = try parseAddress(admin, what: "--admin")
        config.admin = (h, p)
    }
    config.adminTokenFile = o.value("--admin-token-file", env: "LISTSYNC_ADMIN_TOKEN_FILE")
    config.cluster = try parseCluster(o)
    if o.has("--discover") || ProcessInfo.processInfo.environment["LISTSYNC_DISCOVER"] == "1" {
        var d = DaemonConfiguration.Discovery()
        if let p = o.value("--discover-port", env: "LISTSYNC_DISCOVER_PORT") {
            guard let v = UInt16(p) else { throw UsageError(message: "--discover-port must be a port number, not '\(p)'") }
            d.port = v
        }
        for t in o.all("--announce-to", env: "LISTSYNC_ANNOUNCE_TO") {
            let (h, port) = try parseAddress(t, what: "--announce-to")
            d.announceTo.append((h, port))
        }
        if let s = o.value("--announce-interval", env: "LISTSYNC_ANNOUNCE_INTERVAL") {
            d.interval = try parseSeconds(s, what: "--announce-interval")
        }
        d.announceAddress = o.value("--announce-address", env: "LISTSYNC_ANNOUNCE_ADDRESS")
        config.discovery = d
    }
    if let n = o.value("--max-connections", env: "LISTSYNC_MAX_CONNECTIONS") {
        guard let v = Int(n), v > 0 else { throw UsageError(message: "--max-connections must be a positive number, not '\(n)'") }
        config.tcp.maxConnections = v
    }
    if let s = o.value("--idle-unload", env: "LISTSYNC_IDLE_UNLOAD") {
        guard let v = Int(s), v > 0 else { throw UsageError(message: "--idle-unload must be a positive number of seconds, not '\(s)'") }
        config.idleUnload = .seconds(v)
    }
    try compactionOptions(o, into: &config)
    if let s = o.value("--rate-limit", env: "LISTSYNC_RATE_LIMIT") {
        let parts = s.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let rate = Double(parts[0]), rate >= 0, rate.isFinite,
              parts.count == 1 || Double(parts[1]).map({ $0 >= 1 && $0.isFinite }) == true else {
            throw UsageError(message: "--rate-limit is N or N/BURST (batches a second, and at once), not '\(s)'")
        }
        config.rateLimit = rate == 0 ? nil : RateLimit(batchesPerSecond: rate, burst: parts.count == 2 ? Double(parts[1])! : max(1, rate * 5))
    }
    switch o.value("--storage", env: "LISTSYNC_STORAGE") ?? "shared" {
    case "shared": config.sharedLog = SharedLogOptions()
    case "per-document": config.sharedLog = nil
    case let other: throw UsageError(message: "--storage is shared or per-document, not '\(other)'")
    }
    let format = o.value("--log-format", env: "LISTSYNC_LOG_FORMAT") ?? "text"
    guard format == "text" || format == "json" else { throw UsageError(message: "--log-format is text or json, not '\(format)'") }
    config.log = { event, fields in logLine(event, fields, json: format == "json") }

    let web = try o.value("--web", env: "LISTSYNC_WEB_LISTEN").map(parseWebAddress)
    // A port taken already is said before anything is created (no data folder, no key).
    do {
        try checkListenAddressFree(host: config.listenHost, port: config.listenPort, flag: "--listen")
        if let (h, p) = config.admin { try checkListenAddressFree(host: h, port: p, flag: "--admin") }
        if let (h, p) = web { try checkListenAddressFree(host: h, port: p, flag: "--web") }
    } catch {
        printError("listsync serve: \(error)")
        return 1
    }
    let webView = WebViewHolder()
    let webFolder = config.dataFolder, webLog = config.log
    let daemon = Daemon(configuration: config)
    let exitCode = Mutex<Int32>(0)
    let done = DispatchSemaphore(value: 0)
    signal(SIGTERM, SIG_IGN)
    signal(SIGINT, SIG_IGN)
    signal(SIGPIPE, SIG_IGN)
    var sources: [any DispatchSourceSignal] = []
    for sig in [SIGTERM, SIGINT] {
        let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
        s.setEventHandler {
            logLine("stopping", ["signal": sig == SIGTERM ? "SIGTERM" : "SIGINT"], json: format == "json")
            Task {
                if let view = webView.current {
                    await view.stop()
                    try? FileManager.default.removeItem(atPath: webAddressPath(webFolder))
                }
                await daemon.stop()
                logLine("stopped", [:], json: format == "json")
                done.signal()
            }
        }
        s.resume()
        sources.append(s)
    }
    Task {
        do {
            try await daemon.start()
            let address = await daemon.address?.description ?? "?"
            let created = await daemon.keyCreated
            let key = daemon.keyPath
            var admin = await daemon.adminAddress.map { "\n  admin:       http://\($0)/metrics (and /healthz, /readyz)" } ?? ""
            if let token = await daemon.adminTokenPath {
                let made = await daemon.adminTokenCreated ? " (created now, mode 0600)" : ""
                admin += "\n  admin token: \(token)\(made); send `Authorization: Bearer $(cat \(token))` (all but /healthz)"
            }
            if let (host, port) = web {
                let view = try await startWeb(host: host, port: port, daemon: daemon, dataFolder: webFolder,
                                              log: { webLog?($0, $1) })
                webView.set(view)
                admin += "\n  web view:    http://\(await view.address?.description ?? "?")/ (a login link: `listsync open [DOC]`)"
            }
            print("""
                listsync daemon listening on \(address)
                  data folder: \(config.dataFolder)
                  key file:    \(key)\(created ? " (created now, mode 0600)" : "")
                  cluster:     \(config.cluster.map { "\($0.servers.map(\.description).joined(separator: ",")) (ack \($0.acknowledgement.rawValue))" } ?? "off")
                  peers:       \(config.peers.isEmpty ? "none" : config.peers.map { "\($0.host):\($0.port)" }.joined(separator: ", "))\(config.discovery.map { " (and LAN discovery on UDP port \($0.port))" } ?? "")\(admin)
                connect from another terminal:
                  listsync status --daemon \(address) --key-file \(key)
                  listsync create groceries --daemon \(address) --key-file \(key)
                """)
            fflush(nil)
        } catch {
            printError("listsync serve: \(error)")
            exitCode.withLock { $0 = 1 }
            done.signal()
        }
    }
    done.wait()
    _ = sources
    return exitCode.withLock { $0 }
}

/// One log line on standard error: `time event key=value ...` or a JSON object. Values are
/// escaped (``PrintableText``): a document name with a newline or `ESC` stays inside its field
/// and cannot forge a line or reach the terminal raw (Docs/Security.md, "Output").
func logLine(_ event: String, _ fields: [String: String], json: Bool) {
    let time = ISO8601DateFormatter().string(from: Date())
    var line: String
    if json {
        var object = fields
        object["time"] = time
        object["event"] = event
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        line = PrintableText.escapedJSON(String(decoding: data, as: UTF8.self))
    } else {
        line = "\(time) \(event)"
        for k in fields.keys.sorted() { line += " \(k)=\(logValue(fields[k]!))" }
    }
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// A text log line's value: escaped, and quoted (with `\"` inside) when it is empty or holds a
/// space, a quote or `=`, so that each `key=value` reads back as exactly one field.
func logValue(_ value: String) -> String {
    let v = PrintableText.escaped(value)
    guard v.isEmpty || v.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) else { return v }
    return "\"" + v.replacingOccurrences(of: "\"", with: "\\\"") + "\""
}

/// `--cluster`, `--ack` and `--cluster-replicas` (and their environment variables).
func parseCluster(_ o: Options) throws -> ClusterConfiguration? {
    let ack = o.value("--ack", env: "LISTSYNC_ACK")
    let replicas = o.value("--cluster-replicas", env: "LISTSYNC_CLUSTER_REPLICAS")
    let trim = o.value("--cluster-trim", env: "LISTSYNC_CLUSTER_TRIM")
    let lease = o.value("--cluster-lease", env: "LISTSYNC_CLUSTER_LEASE")
    let grace = o.value("--cluster-grace", env: "LISTSYNC_CLUSTER_GRACE")
    guard let text = o.value("--cluster", env: "LISTSYNC_CLUSTER") else {
        if [ack, replicas, trim, lease, grace].contains(where: { $0 != nil }) {
            throw UsageError(message: "--ack, --cluster-replicas, --cluster-trim, --cluster-lease and --cluster-grace need --cluster")
        }
        return nil
    }
    guard let servers = NATSServerAddress.list(text) else {
        throw UsageError(message: "--cluster must be nats://HOST:PORT[,nats://HOST:PORT…], not '\(text)'")
    }
    var c = ClusterConfiguration(servers: servers)
    if let ack {
        guard let level = ClusterConfiguration.Acknowledgement(rawValue: ack) else {
            throw UsageError(message: "--ack must be local or cluster, not '\(ack)'")
        }
        c.acknowledgement = level
    }
    if let replicas {
        guard let n = Int(replicas), (1...5).contains(n) else {
            throw UsageError(message: "--cluster-replicas must be 1 to 5, not '\(replicas)'")
        }
        c.replicas = n
    }
    if let trim {
        guard let n = Int(trim), n >= 0 else { throw UsageError(message: "--cluster-trim must be a number of messages, not '\(trim)'") }
        c.trimMessages = n
    }
    if let lease { c.leaseDuration = try parseSeconds(lease, what: "--cluster-lease") }
    if let grace { c.interestGrace = try parseSeconds(grace, what: "--cluster-grace") }
    return c
}

/// A positive duration of at most a day given to `what`: seconds ("1.5") or with a unit ("90s",
/// "15m", "12h", "1d"), as ``parseDuration(_:)`` reads them.
func parseSeconds(_ text: String, what: String) throws -> Duration {
    guard let d = parseDuration(text), d > .zero, d <= .seconds(86_400) else {
        throw UsageError(message: "\(what) must be a number of seconds (or 90s, 15m, 12h), at most a day, not '\(text)'")
    }
    return d
}

/// `--retire-after`, `--compact-after`, `--compact-interval`, `--compact-dead-share`,
/// `--compact-dead-floor` and `--forget-peer` (Docs/Daemon.md, "Compaction").
private func compactionOptions(_ o: Options, into config: inout DaemonConfiguration) throws {
    var policy = config.compaction ?? CompactionPolicy()
    if let s = o.value("--retire-after", env: "LISTSYNC_RETIRE_AFTER") {
        guard let v = parseDuration(s) else {
            throw UsageError(message: "--retire-after is a duration (90s, 15m, 12h, 30d, or seconds), not '\(s)'")
        }
        policy.retireAfter = v
    }
    if let s = o.value("--compact-interval", env: "LISTSYNC_COMPACT_INTERVAL") {
        guard let v = parseDuration(s) else { throw UsageError(message: "--compact-interval must be seconds (or 90s, 15m), not '\(s)'") }
        policy.interval = v
    }
    if let s = o.value("--compact-dead-share", env: "LISTSYNC_COMPACT_DEAD_SHARE") {
        policy.reclaimableShare = try parseShare(s)
    }
    if let s = o.value("--compact-dead-floor", env: "LISTSYNC_COMPACT_DEAD_FLOOR") {
        guard let v = parseByteCount(s) else {
            throw UsageError(message: "--compact-dead-floor must be a number of bytes (or 64K, 1M, 1G), not '\(s)'")
        }
        policy.reclaimableFloor = v
    }
    if o.has("--compact-stable-prefix") && o.has("--compact-quiescent-only") {
        throw UsageError(message: "--compact-stable-prefix and --compact-quiescent-only contradict each other: give one")
    }
    if o.has("--compact-quiescent-only") { policy.stablePrefixes = false }
    for text in o.all("--forget-peer", env: "LISTSYNC_FORGET_PEERS") {
        let digits = text.hasPrefix("r") ? String(text.dropFirst()) : text
        guard let raw = UInt64(digits), raw != 0 else {
            throw UsageError(message: "--forget-peer is a daemon's replica id as `listsync status` shows it (r123), not '\(text)'")
        }
        policy.forgottenPeers.insert(ReplicaID(raw))
    }
    config.compaction = policy
    if let s = o.value("--compact-after", env: "LISTSYNC_COMPACT_AFTER") {
        guard let v = Int(s), v >= 0 else { throw UsageError(message: "--compact-after must be a number of operations, not '\(s)'") }
        if v == 0 { config.compaction = nil } else { config.compaction?.minOperations = v }
    }
}

/// `--compact-dead-share`: a fraction from 0 to 1 ("0.5"), a percentage ("50%"), or "off" (nil:
/// the bytes trigger off).
func parseShare(_ text: String) throws -> Double? {
    if text == "off" { return nil }
    let percent = text.hasSuffix("%")
    guard let v = Double(percent ? String(text.dropLast()) : text), v.isFinite else {
        throw UsageError(message: "--compact-dead-share must be a fraction from 0 to 1, a percentage (50%) or off, not '\(text)'")
    }
    let share = percent ? v / 100 : v
    guard share >= 0, share <= 1 else {
        throw UsageError(message: "--compact-dead-share must be from 0 to 1 (0% to 100%), not '\(text)'")
    }
    return share
}

/// A number of bytes: "65536", or with a binary unit "64K", "1M", "1G" (also "64KiB"); nil for
/// anything else, a negative count, or one past 1 TiB.
func parseByteCount(_ text: String) -> Int? {
    var digits = Substring(text)
    if digits.hasSuffix("iB") { digits = digits.dropLast(2) }
    var unit = 1
    if let last = digits.last, let u = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30][String(last).uppercased()] {
        unit = u
        digits = digits.dropLast()
    }
    guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), let n = Int(digits),
          n <= (1 << 40) / unit else { return nil }
    return n * unit
}

/// The duration in "90" or "1.5" (seconds), "90s", "15m", "12h" or "30d" (to the millisecond);
/// nil for anything else, a negative one, or one over about 30,000 years.
func parseDuration(_ text: String) -> Duration? {
    let units: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
    var digits = Substring(text), unit = 1.0
    if let last = text.last, let u = units[last] {
        digits = text.dropLast()
        unit = u
    }
    guard let v = Double(digits), v.isFinite, v >= 0, v * unit <= 1e12 else { return nil }
    return .milliseconds(Int64((v * unit * 1000).rounded()))
}
