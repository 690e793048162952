import Foundation
import ListSyncCrypto
import ListSyncTCP

/// One LAN discovery announcement: "daemon `node` (instance `instance`) serves TCP at `address`,
/// said at `time`", authenticated with the pre-shared key (Docs/Security.md, "Discovery").
///
/// ```
/// "LSYD" | version u8 (2) | instance u64 BE | node u64 BE | family u8 (4 or 6) | address (4 or 16)
///        | port u16 BE | time u64 BE (Unix ms) | HMAC-SHA256(K, "listsync discovery v2" ‖ all before)[0..<16]
/// ```
///
/// The MAC covers the address and port to dial, so a datagram replayed from elsewhere still only
/// names the daemon that sent it; the time bounds how long a recorded one can be replayed.
struct DiscoveryAnnouncement: Equatable, Sendable {
    static let magic: [UInt8] = Array("LSYD".utf8)
    static let version: UInt8 = 2
    /// The MAC's domain label: a discovery MAC is never a handshake MAC, nor the reverse.
    static let label: [UInt8] = Array("listsync discovery v2".utf8)
    static let tagSize = 16
    /// The sizes with an IPv4 and an IPv6 address.
    static let sizeV4 = 4 + 1 + 8 + 8 + 1 + 4 + 2 + 8 + tagSize
    static let sizeV6 = sizeV4 + 12

    /// The sender's random instance id (a new one at every start, so a restart is noticed).
    var instance: UInt64
    /// The sender's lasting id: its replica id, kept in its data folder (`DIR/replica`), the same
    /// across restarts, so a daemon knows its own announcements of an earlier run.
    var node: UInt64
    /// Where the sender accepts TCP connections: the address and port to dial.
    var address: SocketAddress
    /// When it was sent, in Unix milliseconds.
    var time: UInt64

    /// The datagram, authenticated with `key`.
    func encoded(key: [UInt8]) -> [UInt8] {
        var b = Self.magic + [Self.version]
        Self.append(instance, to: &b)
        Self.append(node, to: &b)
        switch address.host {
        case let .ipv4(a0, a1, a2, a3): b += [4, a0, a1, a2, a3]
        case let .ipv6(bytes): b += [6] + bytes
        }
        b += [UInt8(address.port >> 8), UInt8(address.port & 0xff)]
        Self.append(time, to: &b)
        return b + Self.tag(b, key: key)
    }

    /// Decodes and authenticates a datagram; `nil` for anything else (size, magic, version,
    /// family, MAC). The MAC is compared in constant time.
    init?(decoding bytes: [UInt8], key: [UInt8]) {
        guard bytes.count == Self.sizeV4 || bytes.count == Self.sizeV6,
              bytes.starts(with: Self.magic), bytes[4] == Self.version else { return nil }
        let family = bytes[21]
        guard (family == 4 && bytes.count == Self.sizeV4) || (family == 6 && bytes.count == Self.sizeV6) else { return nil }
        let body = bytes[..<(bytes.count - Self.tagSize)]
        guard ConstantTime.equals(Self.tag(body, key: key), bytes[(bytes.count - Self.tagSize)...]) else { return nil }
        func u64(_ at: Int) -> UInt64 { bytes[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        let hostEnd = family == 4 ? 26 : 38
        let host: SocketAddress.Host = family == 4 ? .ipv4(bytes[22], bytes[23], bytes[24], bytes[25]) : .ipv6(Array(bytes[22..<38]))
        let port = UInt16(bytes[hostEnd]) << 8 | UInt16(bytes[hostEnd + 1])
        self.init(instance: u64(5), node: u64(13), address: SocketAddress(host: host, port: port), time: u64(hostEnd + 2))
    }

    init(instance: UInt64, node: UInt64, address: SocketAddress, time: UInt64) {
        self.instance = instance
        self.node = node
        self.address = address
        self.time = time
    }

    private static func tag(_ body: some Collection<UInt8>, key: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.authenticate(label + body, key: key).prefix(tagSize))
    }

    private static func append(_ v: UInt64, to b: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { b.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }
}

/// What discovery has heard, and whether to act on an authentic announcement: not this daemon's
/// own (its instance, its node, or an address it serves at), within ``window`` of this daemon's
/// clock either way, newer than the last one accepted from that instance (so a replayed datagram
/// is ignored), and naming an address one can dial.
struct DiscoveryState: Sendable {
    /// What became of an authentic announcement.
    enum Verdict: String, Sendable, CaseIterable {
        /// Acted on: its sender may be dialled.
        case accepted
        /// This daemon's own (this run's, an earlier run's, or naming an address it serves at).
        case own
        /// Its time is more than ``window`` before or after this daemon's clock.
        case stale
        /// Not newer than one already accepted from its instance: a replay.
        case replayed
        /// It names no address one can dial (unspecified, broadcast, multicast, port 0).
        case unusable
    }

    /// This run's instance id.
    let instance: UInt64
    /// This daemon's lasting id (its replica id).
    let node: UInt64
    /// Addresses this daemon serves at: an announcement naming one is its own.
    var ownAddresses: Set<SocketAddress> = []
    /// How far an announcement's time may be from the clock, either way, in ms (30 s).
    var window: UInt64 = 30_000
    /// Instances remembered at most; past it the ones heard longest ago go first (those older
    /// than the window go first of all: a replay of them is stale anyway).
    var capacity = 1024
    /// The newest time accepted from each instance.
    private(set) var lastSeen: [UInt64: UInt64] = [:]

    init(instance: UInt64, node: UInt64) {
        self.instance = instance
        self.node = node
    }

    /// Whether to act on `a`, received at `now` (Unix ms); remembers it if so.
    ///
    /// - Complexity: O(1), or O(``capacity``) when the memory is full.
    mutating func consider(_ a: DiscoveryAnnouncement, now: UInt64) -> Verdict {
        if a.instance == instance || a.node == node || ownAddresses.contains(a.address) { return .own }
        let skew = a.time > now ? a.time - now : now - a.time
        guard skew <= window else { return .stale }
        if let last = lastSeen[a.instance], a.time <= last { return .replayed }
        guard Self.dialable(a.address) else { return .unusable }
        lastSeen[a.instance] = a.time
        if lastSeen.count > capacity {
            lastSeen = lastSeen.filter { $0.value &+ window >= now }
            while lastSeen.count > capacity, let oldest = lastSeen.min(by: { $0.value < $1.value }) {
                lastSeen[oldest.key] = nil
            }
        }
        return .accepted
    }

    /// Whether `address` names one host one can connect to.
    static func dialable(_ address: SocketAddress) -> Bool {
        guard address.port != 0 else { return false }
        switch address.host {
        case let .ipv4(a, b, c, d):
            return !(a == 0 || a >= 224 || (a == 255 && b == 255 && c == 255 && d == 255))
        case let .ipv6(bytes):
            return bytes.count == 16 && bytes != [UInt8](repeating: 0, count: 16) && bytes[0] != 0xff
        }
    }
}
