import ListCRDT
import ListTable

/// One replica of a document, connected to any number of peers over any ``Transport``s.
///
/// Local edits go through ``edit(_:)``; their operations are forwarded to every live peer. Frames
/// from peers are run through one ``SyncSession`` per connection and the operations they carry are
/// applied to the ``LiveDocument``, whose change sets the UI observes with ``changes()``.
/// Call ``tick()`` periodically (for example every few seconds) for anti-entropy.
public actor Replica {
    /// The document, with its snapshot and change sets.
    public nonisolated let live: LiveDocument
    private var connections: [Int: Connection] = [:]
    private var nextConnection = 0
    /// Operations peers sent that the document refused (malformed or equivocating), most recent
    /// last; the rest of their frames still applied.
    public private(set) var refusedOperations: [ApplyError] = []

    private struct Connection {
        var session: SyncSession
        let transport: any Transport
        var reader: Task<Void, Never>?
    }

    /// A replica of `document`.
    public init(document: ListDocument) {
        live = LiveDocument(document)
    }

    /// The document as it is now.
    public nonisolated var snapshot: ListSnapshot { live.snapshot }

    /// Every later change set, in order.
    public nonisolated func changes() -> AsyncStream<ChangeSet> { live.changes() }

    /// Number of open connections.
    public var connectionCount: Int { connections.count }

    /// Makes local edits and sends their operations to every live peer.
    ///
    /// - Throws: whatever `body` throws; the document is then unchanged and nothing is sent.
    @discardableResult
    public func edit<R: Sendable, E: Error>(_ body: (inout ListDocument) throws(E) -> R) async throws(E) -> LiveDocument.Edit<R> {
        let result = try live.edit(body)
        await forward(result.operations, except: nil)
        return result
    }

    /// Takes back the local user's last group of edits (``LiveDocument/undo()``, the rules of
    /// `Docs/Semantics.md` §6) and sends its operations to every live peer.
    ///
    /// - Throws: ``UndoError``; the document is then unchanged and nothing is sent.
    @discardableResult
    public func undo() async throws(UndoError) -> LiveDocument.Edit<String> {
        let result = try live.undo()
        await forward(result.operations, except: nil)
        return result
    }

    /// Makes the last undone group again (``LiveDocument/redo()``) and sends its operations to
    /// every live peer.
    ///
    /// - Throws: ``UndoError``; the document is then unchanged and nothing is sent.
    @discardableResult
    public func redo() async throws(UndoError) -> LiveDocument.Edit<String> {
        let result = try live.redo()
        await forward(result.operations, except: nil)
        return result
    }

    /// Starts syncing over `transport`: says hello, then handles frames until the transport closes.
    /// Returns the connection's number.
    @discardableResult
    public func connect(_ transport: any Transport) async -> Int {
        let id = nextConnection
        nextConnection += 1
        var session = SyncSession(local: live.replica, maxFrameBytes: min(transport.maxFrame, 1 << 20 - 64))
        let hello = session.start(document: live.document)
        connections[id] = Connection(session: session, transport: transport)
        connections[id]?.reader = Task { [weak self] in
            for await frame in transport.incoming {
                guard let self else { return }
                await self.handle(frame, on: id)
            }
            await self?.drop(id)
        }
        await perform(hello, on: id)
        return id
    }

    /// Anti-entropy: every connection says hello again, so peers send whatever was lost.
    public func tick() async {
        for id in connections.keys.sorted() {
            guard let actions = connections[id]?.session.tick(document: live.document) else { continue }
            await perform(actions, on: id)
        }
    }

    /// Closes every connection.
    public func close() async {
        for (id, c) in connections {
            c.reader?.cancel()
            await c.transport.close()
            connections[id] = nil
        }
    }

    // MARK: Internals

    private func handle(_ frame: [UInt8], on id: Int) async {
        guard var connection = connections[id] else { return }
        let actions: [SyncAction]
        do {
            actions = try connection.session.receive(frame, document: live.document)
        } catch {
            // A peer that sends garbage is cut off; the document is untouched.
            await connection.transport.close()
            drop(id)
            return
        }
        connections[id]?.session = connection.session
        await perform(actions, on: id)
    }

    private func perform(_ actions: [SyncAction], on id: Int) async {
        for action in actions {
            switch action {
            case let .send(frame):
                guard let transport = connections[id]?.transport else { return }
                do { try await transport.send(frame) } catch { drop(id); return }
            case let .deliver(ops):
                let before = live.document.version
                refusedOperations += live.receive(ops).report.refused
                // Relay what was new here to the other peers (they may not be connected to the author).
                let fresh = live.operations(since: before)
                if !fresh.isEmpty { await forward(fresh, except: id) }
                // Operations still waiting for their causes: ask this peer for the gap.
                if let gap = connections[id]?.session.requestMissing(document: live.document), !gap.isEmpty {
                    await perform(gap, on: id)
                }
            }
        }
    }

    private func forward(_ ops: [ListOperation], except: Int?) async {
        for id in connections.keys.sorted() where id != except {
            guard let actions = connections[id]?.session.forward(ops) else { continue }
            await perform(actions, on: id)
        }
    }

    private func drop(_ id: Int) {
        connections[id]?.reader?.cancel()
        connections[id] = nil
    }
}
