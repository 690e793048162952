import Foundation
import Testing
import ListCRDT
import ListTable
@testable import ListSync

/// The `Replica` actor over real in-memory transports.
@Suite struct ReplicaTests {
    /// Waits (bounded) until `condition` holds.
    static func eventually(_ condition: @Sendable () async -> Bool) async -> Bool {
        for _ in 0..<2_000 {
            if await condition() { return true }
            try? await Task.sleep(nanoseconds: 1_000_000)
        }
        return false
    }

    @Test("three replicas connected in a line converge, relaying through the middle")
    func lineOfThree() async throws {
        let a = Replica(document: ListDocument(replica: ReplicaID(1)))
        let b = Replica(document: ListDocument(replica: ReplicaID(2)))
        let c = Replica(document: ListDocument(replica: ReplicaID(3)))
        let (ab1, ab2) = InMemoryTransport.pair()
        let (bc1, bc2) = InMemoryTransport.pair()
        await a.connect(ab1)
        await b.connect(ab2)
        await b.connect(bc1)
        await c.connect(bc2)
        try await a.edit { doc in try doc.insertSection(at: 0, value: Data("A".utf8)) }
        #expect(await Self.eventually { c.snapshot.numberOfSections == 1 })
        let section = try #require(c.snapshot.sections.first?.id)
        try await c.edit { doc in
            for k in 0..<5 { try doc.insertItem(at: IndexPath(item: k, section: 0), value: Data("c\(k)".utf8)) }
        }
        try await a.edit { doc in try doc.setValue(Data("A2".utf8), forSection: section) }
        #expect(await Self.eventually { a.snapshot == c.snapshot && b.snapshot == c.snapshot && a.snapshot.numberOfItems == 5 })
        #expect(a.snapshot.sections[0].value == Data("A2".utf8))
        await a.close(); await b.close(); await c.close()
    }

    @Test("undo and redo on one replica reach the other (Docs/Semantics.md §6)")
    func undoReachesPeers() async throws {
        let a = Replica(document: ListDocument(replica: ReplicaID(1)))
        let b = Replica(document: ListDocument(replica: ReplicaID(2)))
        let (x, y) = InMemoryTransport.pair()
        await a.connect(x)
        await b.connect(y)
        try await a.edit { doc in try doc.insertSection(at: 0, value: Data("A".utf8)) }
        try await a.edit { doc in
            for k in 0..<3 { try doc.insertItem(at: IndexPath(item: k, section: 0), value: Data("a\(k)".utf8)) }
        }
        try await a.edit { doc in try doc.moveItem(from: IndexPath(item: 0, section: 0), to: IndexPath(item: 2, section: 0)) }
        #expect(await Self.eventually { b.snapshot == a.snapshot })
        let undone = try await a.undo()
        #expect(undone.result == "Move" && undone.operations.count == 1)
        #expect(await Self.eventually { b.snapshot == a.snapshot && b.snapshot.sections.first?.items.first?.value == Data("a0".utf8) })
        try await a.redo()
        #expect(await Self.eventually { b.snapshot == a.snapshot && b.snapshot.sections.first?.items.last?.value == Data("a0".utf8) })
        await #expect(throws: UndoError.nothingToUndo) { try await b.undo() }
        await a.close(); await b.close()
    }

    @Test("a replica's change stream reports remote inserts")
    func changeStream() async throws {
        let a = Replica(document: ListDocument(replica: ReplicaID(1)))
        let b = Replica(document: ListDocument(replica: ReplicaID(2)))
        let stream = b.changes()
        let (x, y) = InMemoryTransport.pair()
        await a.connect(x)
        await b.connect(y)
        try await a.edit { doc in try doc.insertSection(at: 0) }
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.insertedSections == IndexSet(integer: 0))
        await a.close(); await b.close()
    }

    @Test("a peer that sends garbage is disconnected and the document is untouched")
    func garbagePeer() async throws {
        let a = Replica(document: ListDocument(replica: ReplicaID(1)))
        try await a.edit { doc in try doc.insertSection(at: 0) }
        let before = a.live.document.encodedState()
        let (x, y) = InMemoryTransport.pair()
        await a.connect(x)
        try await y.send([1, 2, 0xff, 0xff, 0xff])
        #expect(await Self.eventually { await a.connectionCount == 0 })
        #expect(a.live.document.encodedState() == before)
    }
}

@Suite struct ReplicaRefusalTests {
    @Test("an operation the document refuses is recorded; the connection and the rest stay")
    func refusedOperation() async throws {
        let a = Replica(document: ListDocument(replica: ReplicaID(1)))
        let (x, y) = InMemoryTransport.pair()
        await a.connect(x)
        // A peer (replica 9) says hello, then sends a good op and one naming an unknown section.
        try await y.send(SyncMessage.hello(replica: ReplicaID(9), version: VersionVector()).encoded())
        var peer = ListDocument(replica: ReplicaID(9))
        let good = try peer.insertSection(at: 0, value: Data("ok".utf8))
        let bad = ListOperation(id: OpID(counter: 2, replica: ReplicaID(9)), deps: Frontier([good.id]),
                                kind: .insertItem(section: SectionID(OpID(counter: 1, replica: ReplicaID(77))),
                                                  .init(after: nil, before: nil), value: Data()))
        try await y.send(SyncMessage.operations([good, bad]).encoded())
        #expect(await ReplicaTests.eventually { await a.refusedOperations.count == 1 })
        #expect(a.snapshot.numberOfSections == 1)
        #expect(await a.connectionCount == 1)
        await a.close()
    }
}

@Suite struct InMemoryListenerTests {
    @Test("connect and accept pair up connections; a closed listener refuses")
    func connectAccept() async throws {
        let listener = InMemoryListener()
        let client = await listener.connect()
        let server = try await listener.accept()
        try await client.send([1, 2, 3])
        var it = server.incoming.makeAsyncIterator()
        #expect(await it.next() == [1, 2, 3])
        await listener.close()
        await #expect(throws: TransportError.closed) { _ = try await listener.accept() }
    }
}

/// `Replica` and the causal buffer: a gap in what a peer sent is asked for again.
@Suite struct ReplicaGapTests {
    @Test("operations that arrive ahead of their causes make the replica ask the peer for the gap, which fills it")
    func gapRequest() async throws {
        // The peer, driven by hand: its document holds a section and three items.
        var source = ListDocument(replica: ReplicaID(9))
        var ops = [try source.insertSection(at: 0)]
        for k in 0..<3 { ops.append(try source.insertItem(atRow: k, inSection: 0, value: Data([UInt8(k)]))) }
        let a = Replica(document: ListDocument(replica: ReplicaID(1)))
        let (x, y) = InMemoryTransport.pair()
        let hellos = HelloLog()
        let reader = Task { for await frame in y.incoming { await hellos.add(frame) } }
        await a.connect(x)
        #expect(await ReplicaTests.eventually { await hellos.versions.count == 1 })
        try await y.send(SyncMessage.hello(replica: ReplicaID(9), version: VersionVector()).encoded())
        // The last two operations only: the first two are "lost".
        try await y.send(SyncMessage.operations(Array(ops.suffix(2))).encoded())
        // The replica says hello again with its version (nothing applied yet)...
        #expect(await ReplicaTests.eventually { await hellos.versions.count == 2 })
        #expect(await hellos.versions.last == VersionVector())
        #expect(a.live.document.pendingCount == 2)
        // ...and the peer's answer (everything after that version) fills the gap.
        try await y.send(SyncMessage.operations(ops).encoded())
        let expected = source.snapshot()
        #expect(await ReplicaTests.eventually { a.snapshot == expected })
        #expect(a.live.document.pendingCount == 0)
        reader.cancel()
        await a.close()
    }
}

/// The versions of the hellos a hand-driven peer received.
private actor HelloLog {
    var versions: [VersionVector] = []
    func add(_ frame: [UInt8]) {
        if case let .hello(_, version)? = try? SyncMessage(decoding: frame) { versions.append(version) }
    }
}
