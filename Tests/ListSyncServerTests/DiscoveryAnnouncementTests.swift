import Testing
import ListSync
@testable import ListSyncServer

@Suite("Discovery announcements: authenticated, fresh, not replayed")
struct DiscoveryAnnouncementTests {
    let key: [UInt8] = Array(0..<32)

    @Test("round trip; another key, a flipped bit or a cut datagram is not an announcement")
    func authenticity() {
        let a = DiscoveryAnnouncement(instance: 0xabcdef, port: 7450, time: 1_000_000)
        let bytes = a.encoded(key: key)
        #expect(bytes.count == DiscoveryAnnouncement.size)
        #expect(DiscoveryAnnouncement(decoding: bytes, key: key) == a)
        #expect(DiscoveryAnnouncement(decoding: bytes, key: Array(repeating: 9, count: 32)) == nil)
        for i in bytes.indices {
            var flipped = bytes
            flipped[i] ^= 0x04
            #expect(DiscoveryAnnouncement(decoding: flipped, key: key) == nil, "bit flip at \(i)")
        }
        for n in 0..<bytes.count { #expect(DiscoveryAnnouncement(decoding: Array(bytes.prefix(n)), key: key) == nil) }
    }

    @Test("our own, stale, future and replayed announcements are ignored; a newer one is accepted")
    func freshness() {
        var s = DiscoveryState(instance: 1)
        let now: UInt64 = 10_000_000
        let r1 = s.accept(DiscoveryAnnouncement(instance: 1, port: 1, time: now), now: now)
        #expect(!r1, "our own")
        let r2 = s.accept(DiscoveryAnnouncement(instance: 2, port: 1, time: now - 200_000), now: now)
        #expect(!r2, "stale")
        let r3 = s.accept(DiscoveryAnnouncement(instance: 2, port: 1, time: now + 200_000), now: now)
        #expect(!r3, "from the future")
        let r4 = s.accept(DiscoveryAnnouncement(instance: 2, port: 1, time: now), now: now)
        #expect(r4)
        let r5 = s.accept(DiscoveryAnnouncement(instance: 2, port: 1, time: now), now: now + 10)
        #expect(!r5, "replayed")
        let r6 = s.accept(DiscoveryAnnouncement(instance: 2, port: 1, time: now + 5), now: now + 10)
        #expect(r6, "newer")
    }
}
