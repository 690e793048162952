/// What happened to a received operation.
public enum ReceiveOutcome: Hashable, Sendable {
    /// Applied, together with `woken - 1` buffered operations it unblocked (`woken` in all).
    case applied(woken: Int)
    /// Already known with the same content (or already waiting in the buffer): nothing changed.
    case duplicate
    /// Waiting in the buffer for its causal dependencies.
    case buffered
}

/// Remote operations.
extension ListDocument {
    /// Applies an operation from another replica (or from this one, replayed).
    ///
    /// Duplicates are ignored; an operation whose causal dependencies are missing waits in a buffer
    /// and is applied when they arrive (together with everything it unblocks); an operation whose id
    /// is known with different content is refused and recorded (SEMANTICS §3.8–3.9).
    ///
    /// - Throws: ``ApplyError``; the document is then exactly as before.
    /// - Complexity: O(log n) for an insert or move whose origins are adjacent here, plus O(k log n)
    ///   for k concurrent slots between them; deletes of sections are O(k log n) for k items.
    @discardableResult
    public mutating func receive(_ op: ListOperation) throws(ApplyError) -> ReceiveOutcome {
        if continuationFastPath, receiveContinuation(op) { return .applied(woken: 1) }
        if let outcome = try screen(op) { return outcome }
        if let missing = firstMissingDependency(of: op) {
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
        return .applied(woken: 1 + wake(op.id.replica))
    }

    /// Applies operations in the order given (see ``receive(_:)``), skipping the ones refused.
    /// Returns the errors of the refused ones.
    ///
    /// - Complexity: the sum of the single operations.
    @discardableResult
    public mutating func receive<S: Sequence>(_ ops: S) -> [ApplyError] where S.Element == ListOperation {
        receive(Array(ops))
    }

    /// ``receive(_:)-(S)`` for an array: the same, without going through the generic `Sequence`
    /// iterator (callers in other modules cannot specialize the generic version). A typed run (item
    /// inserts each continuing the one before, as the encoder's insert runs) or a delete run
    /// (backspaces or forward deletes, as the encoder's delete runs) is applied in one step once
    /// its first operation is in.
    ///
    /// - Complexity: the sum of the single operations; O(n + log N) for a typed run of n inserts
    ///   or a delete run of n consecutive typed items.
    @discardableResult
    public mutating func receive(_ ops: [ListOperation]) -> [ApplyError] {
        var errors: [ApplyError] = []
        var k = 0
        while k < ops.count {
            let outcome: ReceiveOutcome
            do { outcome = try receive(ops[k]) } catch {
                errors.append(error)
                k += 1
                continue
            }
            k += 1
            // A typed run or a delete run that follows an applied insert or delete goes in in one step.
            if outcome == .applied(woken: 1) { k = receiveRun(ops, from: k) }
        }
        return errors
    }

    /// Operations received but still waiting for dependencies, sorted by id.
    public var pendingOperations: [ListOperation] { buffer.all }

    // MARK: Steps

    /// Applies `op` at once, and returns true, when it is an item insert that continues the last
    /// applied operation: the next id of the same author, depending on exactly that insert, right
    /// after its slot with the same right origin, in the same section, and nothing concurrent sits
    /// between the two origins here. Every check ``screen(_:)`` and ``resolve(_:)`` would make
    /// holds then by construction (the id is new, the dependency applied, the origins known, in
    /// order and in that section), and the integration rule has nothing to scan; so a typed run
    /// (a history being loaded, a peer typing) skips them. Anything else returns false and
    /// changes nothing. (Operations with this replica's id are never continuations: only this
    /// replica makes them, and an unknown one is refused by the general checks.)
    ///
    /// - Complexity: O(leafCapacity) to check, then the insert.
    private mutating func receiveContinuation(_ op: ListOperation) -> Bool {
        guard case let .insertItem(sectionID, origins, value) = op.kind, let last = log.lastItemInsert,
              buffer.count == 0, variant == .correct,
              op.id.replica == last.id.replica, op.id.replica != replica,
              op.id.counter == last.id.counter &+ 1, op.id.counter <= OpID.maxCounter,
              op.deps.isOnly(last.id), origins.after?.opID == last.id,
              value.count <= maxValueSize else { return false }
        let section = slots.sequence(of: last.slot)
        let right = slots.origins(of: last.slot).right
        guard sectionID.opID == sections.rows[Int(section)].id else { return false }
        if right < 0 {
            guard origins.before == nil else { return false }
        } else {
            guard let before = origins.before, before.opID == slots.id(of: right) else { return false }
        }
        let at = forest.locate(last.slot, leafOf: leafOf)
        let next = forest.next(at)
        guard right < 0 ? next == nil : (next.map { forest.lv(at: $0) } == right) else { return false }
        commit(op, .insertItem(section: section, left: last.slot, right: right, value: value),
               hint: .after(at))
        return true
    }

    /// Duplicate and equivocation checks, and the checks that need no state. Nil means "go on".
    private mutating func screen(_ op: ListOperation) throws(ApplyError) -> ReceiveOutcome? {
        if versionVector.contains(op.id) {
            if let known = loggedOperation(containing: op.id) {
                if known == op { return .duplicate }
                rejected.append(op)
                throw .equivocation(op.id)
            }
            throw .malformed(op.id, "its counter is not after \(op.id.replica)'s latest operation")
        }
        if buffer.count > 0, let waiting = buffer.operation(op.id) {
            if waiting == op { return .duplicate }
            rejected.append(op)
            throw .equivocation(op.id)
        }
        if op.id.counter == 0 { throw .malformed(op.id, "counter 0 is reserved") }
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
        return nil
    }

    @inline(__always)
    private func firstMissingDependency(of op: ListOperation) -> OpID? {
        for d in op.deps where !versionVector.contains(d) { return d }
        return nil
    }

    /// Applies every buffered operation that the arrival of operations from `replica` unblocked.
    /// Returns how many were applied. Buffered operations that turn out malformed are dropped.
    ///
    /// Each buffered operation waits for one dependency (its first missing one); it is handed back
    /// only once that dependency's replica reaches it, then either applies or waits for its next
    /// missing dependency. So every waiting operation is looked at once per dependency it lacked.
    ///
    /// - Complexity: O(k log p) for k operations handed back, plus applying them.
    private mutating func wake(_ replica: ReplicaID) -> Int {
        if buffer.count == 0 { return 0 }
        var applied = 0
        var advanced = [replica]
        while let r = advanced.popLast() {
            for id in buffer.takeReady(r, upTo: versionVector[r]) {
                guard let op = buffer.operation(id) else { continue }
                if let missing = firstMissingDependency(of: op) {
                    buffer.refile(id, waitingFor: missing)
                    continue
                }
                _ = buffer.remove(id)
                // A buffered operation may have become a duplicate or equivocation meanwhile.
                if versionVector.contains(op.id) {
                    if loggedOperation(containing: op.id) != op { rejected.append(op) }
                    continue
                }
                let resolved: ResolvedOperation
                do { resolved = try resolve(op) } catch {
                    dropped.append((op, error))
                    continue
                }
                commit(op, resolved)
                applied += 1
                advanced.append(op.id.replica)
            }
        }
        return applied
    }
}
