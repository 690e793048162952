/// What receiving operations did: one report for every `receive` of ``ListDocument`` (one
/// operation, an array, an encoded batch) and of the layers above it.
///
/// A single operation is one of ``applied(woken:)``, ``duplicate`` and ``buffered`` (or refused:
/// ``ListDocument/receive(_:)-(ListOperation)`` throws then); a batch adds them up, and lists the
/// operations refused, which do not stop the others.
public struct ReceiveReport: Hashable, Sendable, CustomStringConvertible {
    /// Operations applied, including buffered ones (from earlier receives or this one) that they
    /// unblocked.
    public var applied: Int
    /// Operations already known with the same content, or already waiting in the buffer:
    /// nothing changed for them.
    public var duplicates: Int
    /// Operations that went into the buffer to wait for their causal dependencies (those of them
    /// that a later operation of the same batch unblocked are counted in ``applied`` too).
    public var buffered: Int
    /// Why each refused operation was refused, in the order received.
    public var refused: [ApplyError]

    public init(applied: Int = 0, duplicates: Int = 0, buffered: Int = 0, refused: [ApplyError] = []) {
        (self.applied, self.duplicates, self.buffered, self.refused) = (applied, duplicates, buffered, refused)
    }

    /// One operation applied, together with `woken - 1` buffered operations it unblocked.
    public static func applied(woken: Int) -> ReceiveReport { ReceiveReport(applied: woken) }
    /// One operation already known with the same content (or already waiting).
    public static let duplicate = ReceiveReport(duplicates: 1)
    /// One operation waiting in the buffer for its causal dependencies.
    public static let buffered = ReceiveReport(buffered: 1)

    /// Whether no operation was refused.
    public var isSuccess: Bool { refused.isEmpty }

    /// Adds another report's counts and refusals to this one.
    public mutating func add(_ other: ReceiveReport) {
        applied += other.applied
        duplicates += other.duplicates
        buffered += other.buffered
        refused += other.refused
    }

    public var description: String {
        var parts = ["\(applied) applied"]
        if duplicates > 0 { parts.append("\(duplicates) duplicate(s)") }
        if buffered > 0 { parts.append("\(buffered) buffered") }
        if !refused.isEmpty {
            parts.append("\(refused.count) refused: " + refused.map(\.description).joined(separator: "; "))
        }
        return parts.joined(separator: ", ")
    }
}

/// Remote operations.
extension ListDocument {
    /// Applies an operation from another replica (or from this one, replayed).
    ///
    /// Duplicates are ignored; an operation whose causal dependencies are missing waits in a buffer
    /// and is applied when they arrive (together with everything it unblocks); an operation whose id
    /// is known with different content is refused and recorded (SEMANTICS §3.8–3.9).
    ///
    /// - Returns: ``ReceiveReport/applied(woken:)``, ``ReceiveReport/duplicate`` or
    ///   ``ReceiveReport/buffered``.
    /// - Throws: ``ApplyError``; the document is then exactly as before.
    /// - Complexity: O(log n) for an insert or move whose origins are adjacent here, plus O(k log n)
    ///   for k concurrent slots between them; deletes of sections are O(k log n) for k items.
    @discardableResult
    public mutating func receive(_ op: ListOperation) throws(ApplyError) -> ReceiveReport {
        var context = RunContext()
        if case .applied = applyRun(OperationList(ops: CollectionOfOne(op)), from: 0, context: &context) {
            return .applied(woken: 1)
        }
        return try receiveGeneral(op)
    }

    /// Applies operations in the order given (see ``receive(_:)-(ListOperation)``); an operation
    /// refused does not stop the others.
    ///
    /// - Complexity: the sum of the single operations.
    @discardableResult
    public mutating func receive<S: Sequence>(_ ops: S) -> ReceiveReport where S.Element == ListOperation {
        receive(Array(ops))
    }

    /// ``receive(_:)-(S)`` for an array: the same, without going through the generic `Sequence`
    /// iterator (callers in other modules cannot specialize the generic version). A typed run (item
    /// inserts each continuing the one before, as the encoder's insert runs) or a delete run
    /// (backspaces or forward deletes, as the encoder's delete runs) goes in in one step.
    ///
    /// - Complexity: the sum of the single operations; O(n + log N) for a typed run of n inserts
    ///   or a delete run of n consecutive typed items.
    @discardableResult
    public mutating func receive(_ ops: [ListOperation]) -> ReceiveReport {
        var report = ReceiveReport()
        var irregular: String?
        var context = RunContext()
        receive(operations: OperationList(ops: ops), from: 0, into: &report, irregular: &irregular, context: &context)
        return report
    }

    /// Applies the operations of `source` in order, adding what happened to `report`: a run
    /// (``applyRun(_:from:context:)``) in one step where a fast path holds, each other operation by the
    /// general path. `irregular` is set (if nil) to a description of the first operation that
    /// was not applied at once, waking nothing, as operation `position + k`. `context` is the run
    /// route's (``itemInsertReferences(_:section:origins:valueSize:context:)``); the order it kept
    /// aside and the slots it gathered to hide (``RunContext/order``, ``RunContext/deaths``) go into
    /// the trees before any operation takes the general path, and keeping aside stops then.
    mutating func receive<S: RunSource>(operations source: S, from position: Int, into report: inout ReceiveReport,
                                        irregular: inout String?, context: inout RunContext) {
        var k = 0
        while k < source.count {
            if case .applied(let n) = applyRun(source, from: k, context: &context) {
                report.applied += n
                k += n
                continue
            }
            // The general path reads the trees: the order kept aside and the slots gathered to
            // hide go in first.
            settle(&context)
            let op = source.operation(k)
            do {
                let one = try receiveGeneral(op)
                report.add(one)
                if irregular == nil, one != .applied(woken: 1) {
                    irregular = "operation \(position + k) (\(op.id)) was not applied in order: \(one)"
                }
            } catch {
                report.refused.append(error)
                if irregular == nil { irregular = "operation \(position + k) (\(op.id)) refused: \(error)" }
            }
            k += 1
        }
    }

    /// The general path for one operation: duplicate and equivocation checks, the causal buffer,
    /// then ``resolve(_:)`` and ``commit(_:_:hint:)``, and the buffered operations it unblocks.
    private mutating func receiveGeneral(_ op: ListOperation) throws(ApplyError) -> ReceiveReport {
        let screened: ReceiveReport?
        do { screened = try screen(op) } catch {
            // Refused for the floor: what waits for it here never applies (RefusedCauses).
            if compaction != nil, !versionVector.contains(op.id), isBeforeFloor(op) { noteRefusedBeforeFloor(op) }
            throw error
        }
        if let outcome = screened { return outcome }
        if let missing = firstMissingDependency(of: op) {
            if let cause = refusedCause(of: op) {
                noteRefusedBeforeFloor(op)
                throw Self.onRefusedCause(op.id, cause)
            }
            if variant == .noCausalBuffer {
                // Broken on purpose: apply now if the references resolve, else lose the operation.
                guard let resolved = try? resolve(op) else { return .buffered }
                commit(op, resolved)
                return .applied(woken: 1)
            }
            let footprint = op.bufferFootprint
            if let limit = buffer.limitPassed(footprint: footprint, limits: pendingLimits) {
                throw .bufferFull(op.id, limit)
            }
            buffer.add(op, footprint: footprint, waitingFor: missing)
            return .buffered
        }
        let resolved = try resolve(op)
        commit(op, resolved)
        let woken = wake(op.id.replica)
        if refusalsToSweep { dropWaitingOnRefused() }
        return .applied(woken: 1 + woken)
    }

    /// Operations received but still waiting for dependencies, sorted by id.
    public var pendingOperations: [ListOperation] { buffer.all }

    /// Whether exactly `op` was received and waits for its dependencies (received again, it
    /// changes nothing).
    public func isWaiting(_ op: ListOperation) -> Bool { buffer.operation(op.id) == op }

    // MARK: Steps

    /// Duplicate and equivocation checks, and the checks that need no state. Nil means "go on".
    mutating func screen(_ op: ListOperation) throws(ApplyError) -> ReceiveReport? {
        if versionVector.contains(op.id) {
            if let known = loggedOperation(containing: op.id) {
                if known == op { return .duplicate }
                rejected.append(op)
                throw .equivocation(op.id)
            }
            // Before the compaction floor the log is gone: the content cannot be compared.
            if let floor = compaction, floor.version.contains(op.id) { return .duplicate }
            throw .malformed(op.id, "its counter is not after \(op.id.replica)'s latest operation")
        }
        if buffer.count > 0, let waiting = buffer.waitingOperation(op.id) {
            if waiting == op { return .duplicate }
            rejected.append(op)
            throw .equivocation(op.id)
        }
        if op.id.counter == 0 { throw .malformed(op.id, "counter 0 is reserved") }
        if isBeforeFloor(op) { throw Self.beforeFloor(op.id) }
        if op.lastID.counter > OpID.maxCounter || op.lastID.counter < op.id.counter {
            throw .malformed(op.id, "its counter is over the limit")
        }
        for d in op.deps where d.counter >= op.id.counter {
            throw .malformed(op.id, "it depends on \(d), which is not before it")
        }
        // Only this replica makes its own operations: one it has not made can never arrive.
        for d in op.deps where d.replica == replica && d.counter > versionVector[replica] {
            throw .malformed(op.id, "it depends on \(d), an operation this replica never made")
        }
        if let d = op.deps.first(where: { leftBranch(op.id, $0) }) { throw Self.leftBehind(op.id, d) }
        return nil
    }

    /// Whether `op`'s dependency `d` is an earlier operation of its own author than the author's
    /// latest applied one. A replica's operations form one causal chain, and an operation names
    /// its author's latest operation as a dependency when it names one of them at all; so an
    /// author that went on from a later operation never made `op` on the history it went on
    /// with: `op` is of a history its author left (it re-synced from a daemon's copy and made
    /// its unsent edits again under new counters, Docs/Semantics.md §7) or forked. Its counters
    /// may lie above the author's latest (they are Lamport clocks), so the version alone would
    /// let it in, and with it a dependency never applied.
    @inline(__always)
    func leftBranch(_ op: OpID, _ d: OpID) -> Bool {
        d.replica == op.replica && d.counter < versionVector[d.replica]
    }

    /// Whether the operation `id` names is applied here or was collected below the compaction
    /// floor; unlike the version, which holds every counter up to each replica's latest, it says
    /// no for a counter its replica skipped.
    ///
    /// - Complexity: O(log m) for m log records of its replica.
    func holdsExactly(_ id: OpID) -> Bool {
        guard versionVector.contains(id) else { return false }
        if let floor = compaction, floor.version.contains(id) { return floorHolds(id) }
        return log.locate(id) != nil
    }

    /// The refusal of an operation of a history its author left (``leftBranch(_:_:)``).
    static func leftBehind(_ id: OpID, _ d: OpID) -> ApplyError {
        .malformed(id, "it depends on \(d), which its author never made on the history it went on with: its author re-synced and made its unsent edits again (or forked); the operation is of the history it left")
    }

    /// The first of `op`'s dependencies this document has not applied, if any.
    @inline(__always)
    func firstMissingDependency(of op: ListOperation) -> OpID? {
        for d in op.deps where !versionVector.contains(d) { return d }
        return nil
    }

    /// Applies every buffered operation that the arrival of operations from `replica` unblocked.
    /// Returns how many were applied. Buffered operations that turn out malformed are dropped.
    ///
    /// Each buffered chain (PendingBuffer.swift: a run of one replica's operations, each after the
    /// first depending only on the one before) waits for one dependency (its first operation's
    /// first missing one); it is handed back only once that dependency's replica reaches it, then
    /// either applies, operation by operation, or waits for its next missing dependency. So every
    /// waiting operation is looked at once per dependency its chain lacked.
    ///
    /// - Complexity: O(k log p) for k operations handed back, plus applying them.
    private mutating func wake(_ replica: ReplicaID) -> Int {
        if buffer.count == 0 { return 0 }
        var applied = 0
        var advanced = [replica]
        while let r = advanced.popLast() {
            for chain in buffer.takeReady(r, upTo: versionVector[r]) {
                if let missing = firstMissingDependency(of: buffer.head(of: chain)) {
                    buffer.refile(chain: chain, waitingFor: missing)
                    continue
                }
                let ops = buffer.remove(chain: chain)
                var any = false
                for (k, op) in ops.enumerated() {
                    // An earlier operation of the chain was dropped: the rest wait again, as
                    // they would have one by one.
                    if k > 0, let missing = firstMissingDependency(of: op) {
                        for rest in ops[k...] {
                            buffer.add(rest, footprint: rest.bufferFootprint, waitingFor: firstMissingDependency(of: rest) ?? missing)
                        }
                        break
                    }
                    if applyWoken(op) {
                        applied += 1
                        any = true
                    }
                }
                if any { advanced.append(ops[0].id.replica) }
            }
        }
        return applied
    }

    /// Applies one woken operation whose dependencies are all known, or records why it was not:
    /// it may have become a duplicate or equivocation meanwhile, or turned out malformed.
    private mutating func applyWoken(_ op: ListOperation) -> Bool {
        if versionVector.contains(op.id) {
            if compaction?.version.contains(op.id) != true, loggedOperation(containing: op.id) != op { rejected.append(op) }
            return false
        }
        if isBeforeFloor(op) {
            dropped.append((op, Self.beforeFloor(op.id)))
            // What waits for it is dropped once the wake is over (the buffer is being read).
            noteRefusedBeforeFloor(op, sweep: false)
            return false
        }
        // Woken because its dependency's replica reached the counter: check that the
        // dependency itself was applied, not skipped by an author that left the history
        // this operation is of (it made its edits again under later counters).
        if let d = op.deps.first(where: { leftBranch(op.id, $0) || (variant == .dropsWokenOnSkippedCause && !holdsExactly($0)) }) {
            dropped.append((op, Self.leftBehind(op.id, d)))
            return false
        }
        // A dependency of another author that the version counts and this copy never applied
        // (SkippedCauses.swift): the operation waits on, never dropped.
        if let d = skippedCause(of: op) {
            buffer.add(op, footprint: op.bufferFootprint, waitingFor: Self.parkedKey(d))
            return false
        }
        let resolved: ResolvedOperation
        do { resolved = try resolve(op) } catch {
            dropped.append((op, error))
            return false
        }
        commit(op, resolved)
        return true
    }

    /// The refusal of an operation that cannot be causally after the compaction floor.
    static func beforeFloor(_ id: OpID) -> ApplyError {
        .malformed(id, "it was made before its author had seen the version this document was compacted at, so it may name collected state; its author re-syncs from a snapshot and makes its unsent edits again (Docs/Semantics.md, \"Compaction\")")
    }
}
