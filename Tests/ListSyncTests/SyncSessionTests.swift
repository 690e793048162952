import Foundation
import Testing
import ListCRDT
@testable import ListSync

/// The sync protocol as a pure state machine: frames are moved by hand, no transport at all.
@Suite struct SyncSessionTests {
    /// Two documents and the two ends of one connection.
    struct Pair {
        var a: ListDocument, b: ListDocument
        var sa: SyncSession, sb: SyncSession
        var toA: [[UInt8]] = [], toB: [[UInt8]] = []

        init(_ a: ListDocument, _ b: ListDocument, maxOperationsPerFrame: Int = 512) {
            self.a = a
            self.b = b
            sa = SyncSession(local: a.replica, maxOperationsPerFrame: maxOperationsPerFrame)
            sb = SyncSession(local: b.replica, maxOperationsPerFrame: maxOperationsPerFrame)
        }

        mutating func route(_ actions: [SyncAction], fromA: Bool) throws {
            for action in actions {
                switch action {
                case let .send(frame): if fromA { toB.append(frame) } else { toA.append(frame) }
                case let .deliver(ops):
                    for op in ops { if fromA { try a.receive(op) } else { try b.receive(op) } }
                }
            }
        }

        mutating func start() throws {
            try route(sa.start(document: a), fromA: true)
            try route(sb.start(document: b), fromA: false)
        }

        /// Delivers every queued frame (both ways) until none is left; `lose` drops the k-th frame.
        mutating func pump(lose: (Int) -> Bool = { _ in false }) throws {
            var k = 0
            while !toA.isEmpty || !toB.isEmpty {
                if !toB.isEmpty {
                    let f = toB.removeFirst()
                    k += 1
                    if !lose(k) { try route(try sb.receive(f, document: b), fromA: false) }
                }
                if !toA.isEmpty {
                    let f = toA.removeFirst()
                    k += 1
                    if !lose(k) { try route(try sa.receive(f, document: a), fromA: true) }
                }
            }
        }
    }

    static func doc(_ r: UInt64, items: Int) throws -> ListDocument {
        var d = ListDocument(replica: ReplicaID(r))
        try d.insertSection(at: 0, value: Data("S\(r)".utf8))
        for k in 0..<items { try d.insertItem(at: IndexPath(item: k, section: 0), value: Data("\(r)-\(k)".utf8)) }
        return d
    }

    @Test("hello, catch-up of exactly the missing operations, then live streaming")
    func helloCatchUpLive() throws {
        var p = Pair(try Self.doc(1, items: 5), try Self.doc(2, items: 3))
        try p.start()
        #expect(p.sa.state == .greeted)
        try p.pump()
        #expect(p.sa.state == .live && p.sb.state == .live)
        #expect(p.a.snapshot() == p.b.snapshot())
        #expect(p.a.encodedState() == p.b.encodedState())
        #expect(p.sa.operationsSent == 6 && p.sb.operationsSent == 4)   // exactly what the other lacked
        // Live: a new local op is forwarded at once, in one frame.
        let op = try p.a.insertItem(at: IndexPath(item: 0, section: 0), value: Data("new".utf8))
        try p.route(p.sa.forward([op]), fromA: true)
        #expect(p.toB.count == 1)
        try p.pump()
        #expect(p.a.snapshot() == p.b.snapshot())
    }

    @Test("catch-up is sent in bounded batches, in causal order")
    func boundedBatches() throws {
        var p = Pair(try Self.doc(1, items: 100), ListDocument(replica: ReplicaID(2)), maxOperationsPerFrame: 16)
        try p.start()
        try p.route(try p.sa.receive(p.toA.removeFirst(), document: p.a), fromA: true)
        #expect(p.toB.count == 1 + Int((101.0 / 16).rounded(.up)))   // hello + ⌈101/16⌉ batches
        for frame in p.toB.dropFirst() {
            guard case .operations(let ops) = try SyncMessage(decoding: frame) else { Issue.record("not operations"); continue }
            #expect(ops.count <= 16)
        }
        try p.pump()
        #expect(p.b.pendingCount == 0)
        #expect(p.a.encodedState() == p.b.encodedState())
    }

    @Test("catch-up frames stay under the byte limit: a batch of large values is split")
    func framesUnderByteLimit() throws {
        var a = ListDocument(replica: ReplicaID(1))
        try a.insertSection(at: 0)
        for k in 0..<200 {
            try a.insertItem(at: IndexPath(item: k, section: 0), value: Data(repeating: UInt8(k % 251), count: 3_000))
        }
        let limit = 64 * 1024
        var sa = SyncSession(local: a.replica, maxFrameBytes: limit)
        var b = ListDocument(replica: ReplicaID(2))
        _ = sa.start(document: a)
        let actions = try sa.receive(SyncMessage.hello(replica: b.replica, version: b.version).encoded(), document: a)
        let frames = actions.compactMap { if case let .send(f) = $0 { f } else { nil } }
        #expect(frames.count >= 10, "201 operations of ~3 KB need at least 10 frames of 64 KiB")
        for f in frames {
            #expect(f.count <= limit)
            guard case let .operations(ops) = try SyncMessage(decoding: f) else { continue }
            b.receive(ops)
        }
        #expect(b.encodedState() == a.encodedState())
        #expect(sa.framesSent == 1 + frames.count)
    }

    @Test("a lost frame is repaired by the next anti-entropy hello")
    func lossRepairedByTick() throws {
        var p = Pair(try Self.doc(1, items: 4), ListDocument(replica: ReplicaID(2)))
        try p.start()
        try p.pump()
        let op1 = try p.a.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x".utf8))
        let op2 = try p.a.insertItem(at: IndexPath(item: 0, section: 0), value: Data("y".utf8))
        try p.route(p.sa.forward([op1]), fromA: true)
        p.toB.removeAll()                                  // lost
        try p.route(p.sa.forward([op2]), fromA: true)
        try p.pump()
        #expect(p.b.pendingCount == 1)                     // op2 waits for op1
        try p.route(p.sb.tick(document: p.b), fromA: false)
        try p.pump()
        #expect(p.b.pendingCount == 0)
        #expect(p.a.snapshot() == p.b.snapshot())
    }

    @Test("duplicate frames are harmless")
    func duplicates() throws {
        var p = Pair(try Self.doc(1, items: 4), try Self.doc(2, items: 2))
        try p.start()
        try p.pump()
        let op = try p.a.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 3, section: 0))!
        let frames = p.sa.forward([op]).compactMap { if case .send(let f) = $0 { return f } else { return nil } }
        for f in frames + frames + frames { try p.route(try p.sb.receive(f, document: p.b), fromA: false) }
        #expect(p.a.snapshot() == p.b.snapshot())
        #expect(p.b.operationCount == p.a.operationCount)
    }

    @Test("a malformed frame is a typed error and changes neither the session nor the document")
    func malformedFrames() throws {
        var p = Pair(try Self.doc(1, items: 3), try Self.doc(2, items: 3))
        try p.start()
        try p.pump()
        let before = (p.sb.peerVersion, p.sb.framesReceived, p.b.encodedState())
        let good = SyncMessage.operations(p.a.operations).encoded()
        let bad: [[UInt8]] = [[], [9], [1], [1, 7], [1, 1], [1, 1, 5, 200], [1, 1, 5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
                              Array(good.prefix(good.count / 2)), [1, 1, 5, 1, 3, 4, 9]]
        for frame in bad {
            #expect(throws: SyncError.self) { _ = try p.sb.receive(frame, document: p.b) }
        }
        #expect(p.sb.peerVersion == before.0 && p.sb.framesReceived == before.1 && p.b.encodedState() == before.2)
    }

    @Test("every prefix of a valid frame is refused without a crash")
    func truncationAtEveryByte() throws {
        let a = try Self.doc(1, items: 6)
        var session = SyncSession(local: ReplicaID(2))
        let frames = [SyncMessage.hello(replica: a.replica, version: a.version).encoded(), SyncMessage.operations(a.operations).encoded()]
        for frame in frames {
            for n in 0..<frame.count {
                #expect(throws: SyncError.self) { _ = try session.receive(Array(frame.prefix(n)), document: a) }
            }
        }
    }

    @Test("hello frames round-trip")
    func helloRoundTrip() throws {
        let v = VersionVector([ReplicaID(1): 5, ReplicaID(99): 1 << 40])
        let m = SyncMessage.hello(replica: ReplicaID(7), version: v)
        #expect(try SyncMessage(decoding: m.encoded()) == m)
    }

    @Test("operations waiting for a gap: requestMissing says hello once per version, and the peer's answer fills the gap")
    func requestMissingFillsGap() throws {
        var p = Pair(try Self.doc(1, items: 0), try Self.doc(2, items: 0))
        try p.start()
        try p.pump()
        // a makes three inserts; b gets only the last two (the first frame was lost).
        var made: [ListOperation] = []
        for k in 0..<3 { made.append(try p.a.insertItem(at: IndexPath(item: k, section: 0), value: Data([UInt8(k)]))) }
        _ = p.sa.forward(made)   // a believes b has them all now
        for op in made.dropFirst() { #expect(try p.b.receive(op) == .buffered) }
        #expect(p.b.pendingCount == 2)
        let ask = p.sb.requestMissing(document: p.b)
        #expect(ask.count == 1)
        #expect(p.sb.requestMissing(document: p.b).isEmpty, "asked once per version")
        try p.route(ask, fromA: false)
        try p.pump()
        #expect(p.b.pendingCount == 0)
        #expect(p.a.snapshot() == p.b.snapshot())
        #expect(p.sb.requestMissing(document: p.b).isEmpty, "nothing waits")
    }
}
