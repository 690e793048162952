import Testing
@testable import ListSyncTCP
import ListSyncRandom

@Suite("Frames: length-prefixed, capped before the body is read")
struct FrameDecoderTests {
    static func framed(_ bodies: [[UInt8]]) -> [UInt8] {
        bodies.flatMap { FrameDecoder.header($0.count) + $0 }
    }

    static let bodies: [[UInt8]] = [[1], [2, 3], Array(0..<200), [9, 9, 9], Array(repeating: 7, count: 256)]

    @Test("every frame fed one byte at a time comes out whole, in order")
    func oneByteAtATime() throws {
        var d = FrameDecoder(limit: 256)
        var out: [[UInt8]] = []
        for b in Self.framed(Self.bodies) {
            d.append([b])
            while let f = try d.next() { out.append(f.body) }
        }
        #expect(out == Self.bodies)
        #expect(d.buffered == 0)
    }

    @Test("random splits give the same frames", arguments: 0..<20)
    func randomSplits(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let stream = Self.framed(Self.bodies)
        var d = FrameDecoder(limit: 256)
        var out: [[UInt8]] = []
        var i = 0
        while i < stream.count {
            let n = min(stream.count - i, 1 + Int(rng.next() % 40))
            d.append(stream[i..<i + n])
            i += n
            while let f = try d.next() { out.append(f.body) }
        }
        #expect(out == Self.bodies)
    }

    @Test("a length over the cap is refused from its 4 bytes, before any body arrives")
    func capCheckedBeforeBody() {
        var d = FrameDecoder(limit: 256)
        d.append([0xff, 0xff, 0xff, 0xff])   // 4 GiB
        #expect(throws: FrameError.tooLarge(length: 0xffff_ffff, limit: 256)) { try d.next() }
        var e = FrameDecoder(limit: 256)
        e.append(FrameDecoder.header(257))
        #expect(throws: FrameError.tooLarge(length: 257, limit: 256)) { try e.next() }
    }

    @Test("a zero length is refused; a partial header waits")
    func zeroAndPartial() throws {
        var d = FrameDecoder(limit: 256)
        d.append([0, 0, 0])
        #expect(try d.next() == nil)
        d.append([0])
        #expect(throws: FrameError.emptyFrame) { try d.next() }
    }
}

