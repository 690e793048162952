import Testing
import ListSync
import ListSyncTCP
@testable import ListSyncServer

@Suite("Discovery announcements: authenticated, fresh, not replayed, not our own")
struct DiscoveryAnnouncementTests {
    let key: [UInt8] = Array(0..<32)
    let peer = SocketAddress(numeric: "192.168.1.20", port: 7450)!

    @Test("round trip (IPv4 and IPv6); another key, any flipped bit or a cut datagram is not an announcement")
    func authenticity() {
        for address in [peer, SocketAddress(numeric: "fd00::20", port: 7450)!] {
            let a = DiscoveryAnnouncement(instance: 0xabcdef, node: 0x1234, address: address, time: 1_000_000)
            let bytes = a.encoded(key: key)
            if case .ipv4 = address.host { #expect(bytes.count == DiscoveryAnnouncement.sizeV4) } else {
                #expect(bytes.count == DiscoveryAnnouncement.sizeV6)
            }
            #expect(DiscoveryAnnouncement(decoding: bytes, key: key) == a)
            #expect(DiscoveryAnnouncement(decoding: bytes, key: Array(repeating: 9, count: 32)) == nil)
            for i in bytes.indices {
                for bit in 0..<8 {
                    var flipped = bytes
                    flipped[i] ^= 1 << bit
                    #expect(DiscoveryAnnouncement(decoding: flipped, key: key) == nil, "bit \(bit) of byte \(i)")
                }
            }
            for n in 0..<bytes.count { #expect(DiscoveryAnnouncement(decoding: Array(bytes.prefix(n)), key: key) == nil) }
            #expect(DiscoveryAnnouncement(decoding: bytes + [0], key: key) == nil)
        }
    }

    @Test("the MAC covers the address and port: one moved to another address or port fails")
    func forgedAddress() {
        let bytes = DiscoveryAnnouncement(instance: 2, node: 3, address: peer, time: 5).encoded(key: key)
        var otherHost = bytes
        otherHost[25] = 66                       // 192.168.1.66
        var otherPort = bytes
        otherPort[27] ^= 1
        #expect(DiscoveryAnnouncement(decoding: otherHost, key: key) == nil)
        #expect(DiscoveryAnnouncement(decoding: otherPort, key: key) == nil)
        // A v1 announcement (no address) is not one either.
        #expect(DiscoveryAnnouncement(decoding: Array("LSYD".utf8) + [1] + [UInt8](repeating: 0, count: 34), key: key) == nil)
    }

    @Test("own (instance, node, address), stale, future, replayed and undialable announcements are ignored")
    func verdicts() {
        let me = SocketAddress(numeric: "192.168.1.10", port: 7450)!
        var s = DiscoveryState(instance: 1, node: 100)
        s.ownAddresses = [me]
        let now: UInt64 = 10_000_000
        func a(_ instance: UInt64, node: UInt64 = 200, to address: SocketAddress? = nil, at time: UInt64 = now) -> DiscoveryAnnouncement {
            DiscoveryAnnouncement(instance: instance, node: node, address: address ?? peer, time: time)
        }
        #expect(s.consider(a(1), now: now) == .own, "this run's instance")
        #expect(s.consider(a(7, node: 100), now: now) == .own, "an earlier run of this daemon (same node)")
        #expect(s.consider(a(8, to: me), now: now) == .own, "an address this daemon serves at")
        #expect(s.consider(a(2, at: now - 30_001), now: now) == .stale)
        #expect(s.consider(a(2, at: now + 30_001), now: now) == .stale, "from the future")
        #expect(s.consider(a(4, at: now - 30_000), now: now) == .accepted, "at the edge of the window")
        #expect(s.consider(a(5, at: now + 30_000), now: now) == .accepted, "at the other edge")
        #expect(s.consider(a(2, at: now - 10_000), now: now) == .accepted)
        #expect(s.consider(a(2, at: now - 10_000), now: now + 10) == .replayed)
        #expect(s.consider(a(2, at: now - 20_000), now: now + 10) == .replayed, "older than the last one accepted")
        #expect(s.consider(a(2, at: now - 5_000), now: now + 10) == .accepted, "newer")
        for bad in ["0.0.0.0", "255.255.255.255", "224.0.0.1", "::", "ff02::1"] {
            #expect(s.consider(a(3, to: SocketAddress(numeric: bad, port: 7450)!), now: now) == .unusable, "\(bad)")
        }
        #expect(s.consider(a(3, to: SocketAddress(numeric: "10.0.0.1", port: 0)!), now: now) == .unusable, "port 0")
    }

    @Test("the memory of instances is bounded: the stale go first, then the oldest")
    func bounded() {
        var s = DiscoveryState(instance: 1, node: 1)
        s.capacity = 100
        let now: UInt64 = 1_000_000_000
        for i in 0..<100 { #expect(s.consider(.init(instance: 10 + UInt64(i), node: 5, address: peer, time: now - 20_000), now: now) == .accepted) }
        // 40 s later the first 100 are stale: a new one clears them all.
        #expect(s.consider(.init(instance: 500, node: 5, address: peer, time: now + 39_999), now: now + 40_000) == .accepted)
        #expect(s.lastSeen.count == 1)
        for i in 0..<150 { _ = s.consider(.init(instance: 1000 + UInt64(i), node: 5, address: peer, time: now + 40_000 + UInt64(i)), now: now + 40_000) }
        #expect(s.lastSeen.count == 100)
        #expect(s.lastSeen[1149] != nil && s.lastSeen[500] == nil, "the oldest went")
    }
}
