import Foundation
import ListSyncTCP
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// LAN discovery (`--discover`, Docs/Security.md, "Discovery"): announcements out every interval,
/// authentic and fresh ones in; a peer link to each daemon heard (the one with the smaller instance
/// id dials), dropped when its peer falls silent and cannot be reached.
extension Daemon {
    /// Binds the discovery port and starts announcing.
    func startDiscovery(_ d: DaemonConfiguration.Discovery) async throws {
        let key = key, metrics = metrics
        // A daemon that listens on loopback only announces and listens on loopback only.
        let loopback = address?.isLoopback ?? false
        var state = DiscoveryState(instance: UInt64.random(in: 1...UInt64.max), node: replica.rawValue)
        state.window = UInt64(d.window.nanoseconds / 1_000_000)
        let port = address?.port ?? configuration.listenPort
        let announced = try announcedAddress(d, port: port)
        state.ownAddresses = Set([address, announced].compactMap { $0 }.filter { !$0.isUnspecified })
        if address?.isUnspecified ?? false { state.ownAddresses.formUnion(Self.interfaceAddresses(port: port)) }
        discoveryState.withLock { $0 = state }
        // Verdicts on the loop's thread: a flood of replays or forgeries costs a MAC each and never
        // reaches this actor; only accepted announcements (one per peer per interval) do.
        udp = try await UDPSocket.bind(host: loopback ? configuration.listenHost : "0.0.0.0", port: d.port, loop: loop) {
            [weak self] bytes, _ in
            guard let self else { return }
            guard let a = DiscoveryAnnouncement(decoding: bytes, key: key) else { metrics.discovery("invalid"); return }
            let verdict = self.discoveryState.withLock { $0?.consider(a, now: Self.unixMillis()) } ?? .own
            guard verdict == .accepted else { metrics.discovery(verdict.rawValue); return }
            Task { await self.heard(a) }
        }
        guard let announced else {
            log("discovery on", ["udp": udp?.address.description ?? "", "instance": String(state.instance, radix: 16),
                                 "announcing": "nothing: no address to announce; pass --announce-address"])
            return
        }
        let targets = try d.announceTo.isEmpty ? [SocketAddress(numeric: "255.255.255.255", port: d.port)!]
            : d.announceTo.flatMap { try SocketAddress.resolve(host: $0.host, port: $0.port) }
        let (instance, node, interval) = (state.instance, state.node, d.interval)
        announcer = Task { [weak self] in
            while !Task.isCancelled {
                let a = DiscoveryAnnouncement(instance: instance, node: node, address: announced, time: Self.unixMillis())
                for t in targets { await self?.udp?.send(a.encoded(key: key), to: t) }
                try? await Task.sleep(for: interval)
            }
        }
        log("discovery on", ["udp": udp?.address.description ?? "", "instance": String(instance, radix: 16),
                             "announcing": announced.description])
    }

    /// An accepted announcement: dial its address if this daemon is the one to (the smaller
    /// instance id), unless a link to it exists (then it is marked as heard).
    func heard(_ a: DiscoveryAnnouncement) async {
        guard !isStopping, let d = configuration.discovery,
              let instance = discoveryState.withLock({ $0?.instance }) else { return }
        let label = "\(a.address.hostText):\(a.address.port)"
        if peers.contains(where: { $0.label == label }) {
            discoveredHeard[label] = Self.clock()
            metrics.discovery(DiscoveryState.Verdict.accepted.rawValue)
            return
        }
        // Of two daemons that hear each other, the one with the smaller instance id connects.
        guard instance < a.instance else {
            metrics.discovery(DiscoveryState.Verdict.accepted.rawValue)
            return
        }
        guard peers.count(where: \.discovered) < d.maxPeers else {
            metrics.discovery("limit")
            return
        }
        metrics.discovery(DiscoveryState.Verdict.accepted.rawValue)
        log("peer discovered", ["address": label, "instance": String(a.instance, radix: 16), "node": String(a.node, radix: 16)])
        let link = PeerLink(daemon: self, number: subscriberNumber(), host: a.address.hostText, port: a.address.port, key: key,
                            options: configuration.tcp, backoff: configuration.peerBackoff, loop: loop, discovered: true)
        notePeered()
        peers.append(link)
        discoveredHeard[label] = Self.clock()
        await link.start()
    }

    /// Drops each discovered link whose peer has announced nothing for
    /// ``DaemonConfiguration/Discovery/silentIntervals`` intervals and that failed its last
    /// ``DaemonConfiguration/Discovery/failedAttempts`` attempts to connect. Static peers stay.
    func dropSilentPeers() async {
        guard let d = configuration.discovery else { return }
        let silence = (d.interval * d.silentIntervals).nanoseconds
        for link in peers where link.discovered {
            let now = Self.clock()
            let heard = discoveredHeard[link.label] ?? 0
            guard now &- heard >= silence else { continue }
            let failed = await link.failedAttempts
            guard failed >= d.failedAttempts, await !link.isConnected, peers.contains(where: { $0 === link }) else { continue }
            peers.removeAll { $0 === link }
            discoveredHeard[link.label] = nil
            log("peer dropped", ["address": link.label, "silent_ms": "\((now &- heard) / 1_000_000)", "failed_attempts": "\(failed)"])
            await link.stop()
        }
    }

    /// The address peers are told to dial: `--announce-address`, else the listening address, else
    /// (listening on every interface) the first interface address that is not loopback.
    private func announcedAddress(_ d: DaemonConfiguration.Discovery, port: UInt16) throws -> SocketAddress? {
        if let host = d.announceAddress { return try SocketAddress.resolve(host: host, port: port).first }
        if let bound = address, !bound.isUnspecified { return bound }
        return Self.interfaceAddresses(port: port).first { !$0.isLoopback }
    }

    /// This machine's IPv4 interface addresses that are up, with `port`.
    static func interfaceAddresses(port: UInt16) -> [SocketAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(first) }
        var out: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let node = cursor {
            cursor = node.pointee.ifa_next
            // 0x1: IFF_UP (the same value on Linux and the BSDs).
            guard let sa = node.pointee.ifa_addr, Int32(sa.pointee.sa_family) == AF_INET, node.pointee.ifa_flags & 0x1 != 0 else { continue }
            let b = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { p in
                withUnsafeBytes(of: p.pointee.sin_addr) { Array($0) }
            }
            out.append(SocketAddress(host: .ipv4(b[0], b[1], b[2], b[3]), port: port))
        }
        return out
    }
}
