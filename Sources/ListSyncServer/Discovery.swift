import Foundation
import ListSyncCrypto

/// One LAN discovery announcement: "a daemon, instance `instance`, serves TCP on `port`",
/// authenticated with the pre-shared key (Docs/Daemon.md, "Discovery").
///
/// ```
/// "LSYD" | version u8 (1) | instance u64 BE | port u16 BE | time u64 BE (Unix ms) | HMAC-SHA256(K, all before)[0..<16]
/// ```
struct DiscoveryAnnouncement: Equatable, Sendable {
    static let magic: [UInt8] = Array("LSYD".utf8)
    static let size = 4 + 1 + 8 + 2 + 8 + 16

    /// The sender's random instance id (a new one at every start, so a restart is noticed).
    var instance: UInt64
    /// The sender's TCP port.
    var port: UInt16
    /// When it was sent, in Unix milliseconds.
    var time: UInt64

    /// The datagram, authenticated with `key`.
    func encoded(key: [UInt8]) -> [UInt8] {
        var b = Self.magic + [1]
        for shift in stride(from: 56, through: 0, by: -8) { b.append(UInt8(truncatingIfNeeded: instance >> UInt64(shift))) }
        b += [UInt8(port >> 8), UInt8(port & 0xff)]
        for shift in stride(from: 56, through: 0, by: -8) { b.append(UInt8(truncatingIfNeeded: time >> UInt64(shift))) }
        return b + HMACSHA256.authenticate(b, key: key).prefix(16)
    }

    /// Decodes and authenticates a datagram; `nil` for anything else (size, magic, version, MAC).
    init?(decoding bytes: [UInt8], key: [UInt8]) {
        guard bytes.count == Self.size, Array(bytes[0..<4]) == Self.magic, bytes[4] == 1 else { return nil }
        let body = Array(bytes[0..<(Self.size - 16)])
        guard ConstantTime.equals(HMACSHA256.authenticate(body, key: key).prefix(16), bytes[(Self.size - 16)...]) else { return nil }
        func u64(_ at: Int) -> UInt64 { bytes[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        instance = u64(5)
        port = UInt16(bytes[13]) << 8 | UInt16(bytes[14])
        time = u64(15)
    }

    init(instance: UInt64, port: UInt16, time: UInt64) {
        self.instance = instance
        self.port = port
        self.time = time
    }
}

/// What discovery has seen: it accepts an announcement only if it is authentic (decoded with the
/// key), not our own, fresh (its time within `maxSkew` of ours) and newer than the last one from
/// that instance (a replayed datagram is ignored).
struct DiscoveryState: Sendable {
    let instance: UInt64
    var maxSkew: UInt64 = 120_000
    private(set) var lastSeen: [UInt64: UInt64] = [:]

    init(instance: UInt64) { self.instance = instance }

    /// Whether to act on `a`, received at `now` (Unix ms).
    mutating func accept(_ a: DiscoveryAnnouncement, now: UInt64) -> Bool {
        guard a.instance != instance else { return false }
        let skew = a.time > now ? a.time - now : now - a.time
        guard skew <= maxSkew else { return false }
        if let last = lastSeen[a.instance], a.time <= last { return false }
        lastSeen[a.instance] = a.time
        if lastSeen.count > 4096 { lastSeen = lastSeen.filter { now &- $0.value <= maxSkew } }
        return true
    }
}
