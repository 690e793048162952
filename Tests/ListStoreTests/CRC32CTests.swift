import Testing
import ListSyncSimulation
@testable import ListStore

@Suite("CRC32C: check value, RFC 3720 B.4 vectors, masking")
struct CRC32CTests {
    @Test("check value of \"123456789\"")
    func checkValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
    }

    @Test("RFC 3720 B.4: zeros, ones, incrementing, decrementing, iSCSI read PDU")
    func rfc3720() {
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
        #expect(CRC32C.checksum((0..<32).reversed().map { UInt8($0) }) == 0x113F_DB5C)
        let pdu: [UInt8] = [
            0x01, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
            0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ]
        #expect(CRC32C.checksum(pdu) == 0xD996_3A56)
    }

    @Test("incremental updates at every split equal the one-shot checksum; slicing equals bytewise")
    func incremental() {
        var rng = SplitMix64(seed: 7)
        let bytes = (0..<300).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let whole = CRC32C.checksum(bytes)
        #expect(whole == Self.bytewise(bytes))
        for cut in 0...bytes.count {
            var crc = CRC32C()
            crc.update(bytes[..<cut])
            crc.update(bytes[cut...])
            #expect(crc.value == whole, "split at \(cut)")
        }
    }

    @Test("mask and unmask are inverses, and masking changes the value")
    func masking() {
        var rng = SplitMix64(seed: 11)
        for c in [UInt32(0), 1, 0xFFFF_FFFF, 0xE306_9283] + (0..<1000).map({ _ in UInt32.random(in: 0...UInt32.max, using: &rng) }) {
            #expect(CRC32C.unmasked(CRC32C.masked(c)) == c)
            #expect(CRC32C.masked(c) != c || c == 0xA282_EAD8)
        }
        #expect(CRC32C.masked(0) == 0xA282_EAD8)
    }

    /// The textbook one-bit-at-a-time CRC-32C, the reference for the sliced tables.
    static func bytewise(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            crc ^= UInt32(b)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        }
        return ~crc
    }
}
