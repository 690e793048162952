import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation

/// BitWriter and BitReader: the packed areas of move runs (Docs/WireFormat.md §1).
@Suite struct BitPackingTests {
    @Test("bits fill each byte from the least significant bit; the last byte is zero-padded")
    func layout() {
        var w = BitWriter()
        w.write(0b1, width: 1)
        w.write(0b10, width: 2)
        w.write(0x1FF, width: 9)
        w.write(0, width: 0)
        #expect(w.bitCount == 12)
        // bit 0 = 1; bits 1-2 = 0b10; bits 3-11 = 0x1FF.
        #expect(w.finish() == [0b1111_1101, 0b0000_1111])
        #expect(BitWriter().finish().isEmpty)
    }

    @Test("5,000 random runs of fields of every width 0...64 read back exactly")
    func randomRoundTrip() throws {
        var rng = SplitMix64(seed: 77)
        for _ in 0..<5_000 {
            var fields: [(UInt64, Int)] = []
            var w = BitWriter()
            for _ in 0..<rng.below(20) {
                let width = rng.chance(20) ? [0, 1, 56, 57, 63, 64][rng.below(6)] : rng.below(65)
                let v = width == 64 ? rng.next() : rng.next() & ((1 << UInt64(width)) - 1)
                fields.append((v, width))
                w.write(v, width: width)
            }
            let bits = w.bitCount
            let bytes = [0xAA] + w.finish() + [0x55]
            #expect(bytes.count == 2 + (bits + 7) / 8)
            var r = BitReader(bytes, range: 1..<bytes.count - 1)
            for (v, width) in fields {
                if width == 1, rng.chance(50) { #expect(try r.bit() == (v == 1)) } else { #expect(try r.read(width) == v) }
            }
            #expect(r.position == bits)
            try r.finish()
        }
    }

    @Test("reading past the range is truncated at the range's end and consumes nothing")
    func readPastEnd() throws {
        let bytes: [UInt8] = [0xFF, 0x01, 0xFF]
        var r = BitReader(bytes, range: 0..<2)
        #expect(try r.read(9) == 0x1FF)
        #expect(throws: WireError.truncated(offset: 2)) { try r.read(8) }
        #expect(r.position == 9)
        #expect(try r.read(7) == 0)
        #expect(throws: WireError.truncated(offset: 2)) { try r.bit() }
        var empty = BitReader(bytes, range: 3..<3)
        #expect(try empty.read(0) == 0)
        #expect(throws: WireError.truncated(offset: 3)) { try empty.read(1) }
        try empty.finish()
    }

    @Test("finish refuses whole bytes left over and padding bits that are not zero")
    func finishChecks() throws {
        let bytes: [UInt8] = [0b0000_0011, 0x00, 0b0000_0111]
        var r = BitReader(bytes, range: 0..<2)
        #expect(try r.read(2) == 3)
        #expect(throws: WireError.invalidValue("1 bytes left over in a packed area", offset: 1)) { try r.finish() }
        var padded = BitReader(bytes, range: 2..<3)
        #expect(try padded.read(2) == 3)
        #expect(throws: WireError.invalidValue("padding bits not zero", offset: 2)) { try padded.finish() }
        #expect(try padded.read(1) == 1)
        try padded.finish()
    }

    @Test("a packed area longer than the input is truncated")
    func areaPastInput() throws {
        var reader = WireReader([1, 2, 3])
        _ = try reader.byte()
        #expect(throws: WireError.truncated(offset: 3)) { try reader.bitArea(length: 3) }
        var area = try reader.bitArea(length: 2)
        #expect(reader.isAtEnd)
        #expect(try area.read(16) == 0x0302)
    }
}
