import Foundation
import ListCRDT
import Synchronization

/// A document that reports what each change means for a table: every local edit and every batch
/// of remote operations returns a ``ChangeSet``, and subscribers receive every later change set
/// as an `AsyncSequence`.
///
/// `LiveDocument` is the one reference type per replica (STYLE habit 12). It is `Sendable`: all
/// of its state (the document, the last snapshot, the remembered local moves, the undo stacks
/// and the subscribers) lives behind one `Mutex`, so every method runs atomically with respect
/// to the others, from any thread or task, and change sets reach every subscriber in the order
/// the changes were made.
/// Nothing inside the lock calls out to user code except the `edit` closure itself (which must
/// not call back into this `LiveDocument`: the lock is not reentrant).
///
/// Each change costs a full diff of the previous and the new snapshot: O(n log n) for n visible
/// sections and items, whatever the size of the change (see ``ChangeSet/init(from:to:)``). A
/// catch-up of many batches is one diff, not one per batch: ``holdChanges()`` until it is all
/// applied, then ``publishHeldChanges()`` (a large one is reported as one reload).
///
/// Undo: local edits are recorded in groups, and ``undo()`` and ``redo()`` take them back with
/// new operations (`Undo/LiveDocument+Undo.swift`, `Docs/Semantics.md` §6).
///
/// Lost moves: the local move operations made through ``edit(actionName:_:)`` (and by undo and
/// redo) are remembered per item and section. After remote operations, an item whose winning
/// position write is a greater operation that had not seen the local move is reported in
/// ``ChangeSet/lostMoves`` (once) and forgotten.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
public final class LiveDocument: Sendable {
    struct State {
        var document: ListDocument
        /// The snapshot of the last change; `nil` when it is stale (only without change sets).
        var snapshot: ListSnapshot?
        /// Whether changes are diffed into change sets (the default), or the snapshot is only
        /// recomputed when read.
        var publishesChanges = true
        /// Whether the change sets of received operations are held back for one diff at
        /// ``publishHeldChanges()`` (a catch-up; `LiveDocument+Hold.swift`).
        var holdsChanges = false
        /// The lost moves found while changes were held, published with the held change set.
        var heldLostMoves: [LostMove] = []
        /// The document's operation count when ``snapshot`` was taken (what a table shows).
        var snapshotOperationCount = 0
        var localItemMoves: [ItemID: ListOperation] = [:]
        var localSectionMoves: [SectionID: ListOperation] = [:]
        /// The local user's undo and redo stacks (`Undo/LiveDocument+Undo.swift`).
        var undo: ListUndoManager
        var subscribers: [UInt64: AsyncStream<ChangeSet>.Continuation] = [:]
        var nextSubscriber: UInt64 = 0
        /// The other replicas' presence (`Presence/LiveDocument+Presence.swift`).
        var presence = PresenceBoard()
        var presenceSubscribers: [UInt64: AsyncStream<[RemoteActivity]>.Continuation] = [:]
        var closed = false
    }

    let state: Mutex<State>

    /// Wraps a document. Local edits are recorded for ``undo()`` in groups of at most
    /// `undoLimit` (0: not recorded).
    ///
    /// - Complexity: O(n) for n visible sections and items (the first snapshot).
    /// A document without a ``ListDocument/wallClock`` gets ``WallClock/system``, so that of two
    /// concurrent writes of one field the later edit wins (Docs/Semantics.md §8.2).
    public init(_ document: ListDocument, undoLimit: Int = ListUndoManager.defaultLimit) {
        var document = document
        if document.wallClock == nil { document.wallClock = .system }
        state = Mutex(State(document: document, snapshot: document.snapshot(), snapshotOperationCount: document.operationCount,
                            undo: ListUndoManager(limit: undoLimit)))
    }

    /// Wraps a document for a client that needs no change sets (a server, a command-line tool, a
    /// load generator): edits and received operations cost what the document's do, every
    /// returned ``ChangeSet`` is empty (lost moves are still reported), nothing is sent to
    /// ``changes()`` subscribers, and ``snapshot`` is recomputed when first read after a change.
    /// Nothing is recorded for undo unless `undoLimit` is above 0.
    ///
    /// - Complexity: O(1).
    public init(withoutChangeSets document: ListDocument, undoLimit: Int = 0) {
        var document = document
        if document.wallClock == nil { document.wallClock = .system }
        state = Mutex(State(document: document, snapshot: nil, publishesChanges: false,
                            undo: ListUndoManager(limit: undoLimit)))
    }

    deinit {
        finishSubscribers()
    }

    /// The document as it is now (a copy: O(1), shares storage until changed).
    public var document: ListDocument { state.withLock { $0.document } }

    /// The snapshot as of the last change (kept, not recomputed; without change sets, computed
    /// in O(n) on the first read after a change).
    public var snapshot: ListSnapshot {
        state.withLock { state in
            if let s = state.snapshot { return s }
            let s = state.document.snapshot()
            state.snapshot = s
            state.snapshotOperationCount = state.document.operationCount
            return s
        }
    }

    /// The snapshot as of the last change and the number of operations the document had applied
    /// then, read under one lock: a ``ListModel`` refreshes only when the count moved. While
    /// changes are held (``holdChanges()``), that is the snapshot last published.
    var countedSnapshot: (snapshot: ListSnapshot, operationCount: Int) {
        state.withLock { state in
            if let s = state.snapshot { return (s, state.snapshotOperationCount) }
            let s = state.document.snapshot()
            state.snapshot = s
            state.snapshotOperationCount = state.document.operationCount
            return (s, state.snapshotOperationCount)
        }
    }

    /// The replica this document edits as.
    public var replica: ReplicaID { state.withLock { $0.document.replica } }

    /// The result of a local edit.
    public struct Edit<Result: Sendable>: Sendable {
        /// What the edit closure returned.
        public var result: Result
        /// The operations the edit made, in order: send them to the other replicas.
        public var operations: [ListOperation]
        /// What changed for the table.
        public var changes: ChangeSet
    }

    /// Edits the document: `body` gets the document and makes any number of local edits
    /// (`live.edit { doc in try doc.moveItem(from: a, to: b) }`).
    ///
    /// The edit is all or nothing: if `body` throws, the document is what it was before and no
    /// change set is sent. Otherwise subscribers receive the change set (unless it is empty).
    /// `body` runs under the lock: it must not call this `LiveDocument`.
    ///
    /// While undo is recorded (``undoLimit`` above 0), the edits are one undo group named
    /// `actionName` ("Move", "Delete"; by default named after what they do), or part of the
    /// group opened by ``beginUndoGroup(_:)``; they clear the redo stack.
    ///
    /// - Complexity: the edits, plus the diff (see the type's discussion; none without change
    ///   sets). Without undo recording the edits run on the document in place (no copy of its
    ///   storage); with it, the document as it was is kept while `body` runs, so the first edit
    ///   copies the storage it changes (O(n)), and recording costs O(k log n) for k entities
    ///   touched. A closure that throws after making edits has them undone by
    ///   ``ListDocument/rolledBack(toOperationCount:)``, O(n log n) on that path only.
    @discardableResult
    public func edit<R: Sendable, E: Error>(actionName: String? = nil,
                                            _ body: (inout ListDocument) throws(E) -> R) throws(E) -> Edit<R> {
        try state.withLock { (state: inout State) throws(E) -> Edit<R> in
            let start: ListDocument? = state.undo.isRecording ? state.document : nil
            let before = state.document.operationCount
            let result: R
            do throws(E) {
                result = try body(&state.document)
            } catch {
                // A refused edit changes nothing (ListDocument's contract); edits made before it
                // in the same closure are undone.
                state.document = state.document.rolledBack(toOperationCount: before)
                throw error
            }
            let ops = Self.operations(of: state.document, from: before)
            for op in ops { Self.remember(op, in: &state) }
            if let start { state.undo.record(ops, before: start, after: state.document, actionName: actionName) }
            let changes = Self.publish(&state, lostMoves: [])
            return Edit(result: result, operations: ops, changes: changes)
        }
    }

    /// Applies operations from other replicas (see ``ListDocument/receive(_:)-([ListOperation])``)
    /// and returns what changed, with the local moves that lost to concurrent moves, and the
    /// report of what happened to each operation.
    ///
    /// Operations that are refused do not stop the others: they are listed in the report's
    /// ``ReceiveReport/refused``, and the change set is that of the operations applied;
    /// subscribers receive it either way (unless it is empty).
    ///
    /// - Complexity: the operations, plus the diff (see the type's discussion), plus the
    ///   causality checks of remembered local moves that a received move overrode.
    @discardableResult
    public func receive<S: Sequence>(_ operations: S) -> (changes: ChangeSet, report: ReceiveReport)
    where S.Element == ListOperation {
        state.withLock { state in
            let before = state.document.operationCount
            let report = state.document.receive(Array(operations))
            let applied = Self.operations(of: state.document, from: before)
            let lost = Self.lostMoves(after: applied, in: &state)
            if state.holdsChanges && state.publishesChanges {
                // A catch-up: one diff at its end (`publishHeldChanges()`), not one per batch.
                state.heldLostMoves += lost
                Self.publishPresence(&state)
                return (ChangeSet(), report)
            }
            return (Self.publish(&state, lostMoves: lost), report)
        }
    }

    /// Applies one operation from another replica (see ``receive(_:)-(S)``).
    @discardableResult
    public func receive(_ operation: ListOperation) -> (changes: ChangeSet, report: ReceiveReport) {
        receive(CollectionOfOne(operation))
    }

    /// The operations `document` applied after its log held `count` of them.
    private static func operations(of document: ListDocument, from count: Int) -> [ListOperation] {
        do { return try document.operations(from: count) } catch {
            preconditionFailure("the log only grows, so \(count) is within it: \(error)")
        }
    }

    /// Operations this document has applied and `version` has not seen, in causal order.
    ///
    /// - Complexity: O(m) for m operations in the log.
    public func operations(since version: VersionVector) -> [ListOperation] {
        state.withLock { $0.document.operations(since: version) }
    }

    /// A new subscription: every change set made after this call, in order, until
    /// ``close()`` or the end of the `LiveDocument`. Each call makes an independent stream.
    ///
    /// The stream buffers without limit: a subscriber that stops reading keeps its change sets
    /// in memory until it is cancelled.
    public func changes() -> AsyncStream<ChangeSet> {
        makeStream(bufferingPolicy: .unbounded, \.subscribers)
    }

    /// A new stream registered in `subscribers` until it terminates; finished at once when the
    /// document is closed.
    func makeStream<T: Sendable>(bufferingPolicy: AsyncStream<T>.Continuation.BufferingPolicy,
                                 _ subscribers: WritableKeyPath<State, [UInt64: AsyncStream<T>.Continuation]> & Sendable)
        -> AsyncStream<T> {
        let (stream, continuation) = AsyncStream<T>.makeStream(bufferingPolicy: bufferingPolicy)
        let id: UInt64? = state.withLock { state in
            if state.closed { return nil }
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            state[keyPath: subscribers][id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0[keyPath: subscribers].removeValue(forKey: id) }
        }
        return stream
    }

    /// Finishes every subscription; later calls to ``changes()`` return finished streams.
    /// Edits and receives still work.
    public func close() {
        finishSubscribers()
    }

    /// Finishes every change-set and presence stream; later ones are born finished.
    private func finishSubscribers() {
        let (changes, presence) = state.withLock { state in
            state.closed = true
            defer { state.subscribers = [:]; state.presenceSubscribers = [:] }
            return (Array(state.subscribers.values), Array(state.presenceSubscribers.values))
        }
        for c in changes { c.finish() }
        for c in presence { c.finish() }
    }
}

@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
extension LiveDocument {
    /// Diffs the new state against the last snapshot, keeps the new snapshot and sends the
    /// change set to every subscriber (unless it is empty). Called under the lock.
    /// With `reloadingLarge` (a catch-up), a change set over ``ChangeSet/reloadThreshold(rows:)``
    /// is reported as one reload.
    static func publish(_ state: inout State, lostMoves: [LostMove], reloadingLarge: Bool = false) -> ChangeSet {
        // Rows moved: the others' drags are shown at their new places.
        publishPresence(&state)
        let lostFields = state.document.takeFieldConflicts()
        guard state.publishesChanges else {
            state.snapshot = nil
            var none = ChangeSet()
            none.lostMoves = lostMoves
            none.lostFields = lostFields
            return none
        }
        let snapshot = state.document.snapshot()
        let old = state.snapshot ?? snapshot
        var changes: ChangeSet
        if reloadingLarge, ChangeSet.mustReload(from: old, to: snapshot) {
            changes = .reload   // known without the diff (a first open of a large list)
        } else {
            changes = ChangeSet(from: old, to: snapshot)
            if reloadingLarge { changes = changes.asReloadIfLarge(from: old, to: snapshot) }
        }
        changes.lostMoves = state.heldLostMoves + lostMoves
        changes.lostFields = lostFields
        state.heldLostMoves = []
        state.snapshot = snapshot
        state.snapshotOperationCount = state.document.operationCount
        if !changes.isEmpty {
            // `yield` never calls user code and never blocks; doing it under the lock keeps every
            // subscriber's change sets in the order the changes were made.
            for c in state.subscribers.values { c.yield(changes) }
        }
        return changes
    }

    /// Remembers a local move as the latest local move of what it moves.
    static func remember(_ op: ListOperation, in state: inout State) {
        switch op.kind {
        case .moveItems(let ids, _, _):
            for id in ids { state.localItemMoves[id] = op }
        case .moveSection(let id, _):
            state.localSectionMoves[id] = op
        default:
            break
        }
    }

    /// The remembered local moves that the applied operations beat with a concurrent move. Each is
    /// reported once and forgotten; so is a local move overridden by a move that had seen it.
    static func lostMoves(after applied: [ListOperation], in state: inout State) -> [LostMove] {
        var lost: [LostMove] = []
        let doc = state.document
        for op in applied {
            switch op.kind {
            case .moveItems(let ids, _, _):
                for id in ids {
                    guard let local = state.localItemMoves[id],
                          let winner = doc.winningPositionWrite(of: id), winner != local.id else { continue }
                    state.localItemMoves[id] = nil
                    if winner > local.id && !doc.hasSeen(local.id, at: winner) {
                        lost.append(LostMove(subject: .item(id), localOperation: local, winner: winner))
                    }
                }
            case .moveSection(let id, _):
                guard let local = state.localSectionMoves[id],
                      let winner = doc.winningPositionWrite(of: id), winner != local.id else { continue }
                state.localSectionMoves[id] = nil
                if winner > local.id && !doc.hasSeen(local.id, at: winner) {
                    lost.append(LostMove(subject: .section(id), localOperation: local, winner: winner))
                }
            default:
                break
            }
        }
        return lost
    }
}
