import ListCRDT

/// Publishing (Docs/Cluster.md, "Acknowledgement"): a document's pieces are published one after
/// the other, in the order they were appended, each retried with the same message id until the
/// stream acknowledges it, so that the stream holds a prefix of what the node appended (which the
/// republish after a catch-up relies on). With ``Configuration/acknowledgeAfterStream``, a batch
/// is released only once its last piece is acknowledged: durable in the stream before
/// acknowledged.
extension ClusterMachine {
    mutating func appended(_ ticket: UInt64?, _ ops: [ListOperation], _ out: inout [Action]) {
        if stopped {
            if let ticket { out.append(configuration.acknowledgeAfterStream ? .refuse(ticket: ticket) : .release(ticket: ticket)) }
            return
        }
        let pieces = Self.pieces(ops, maxBytes: configuration.maxPayload)
        let waits = configuration.acknowledgeAfterStream && !pieces.isEmpty
        if let ticket, !waits { out.append(.release(ticket: ticket)) }
        for (i, p) in pieces.enumerated() {
            queue.append(Piece(id: nextPiece, operations: p, releases: waits && i == pieces.count - 1 ? ticket : nil))
            nextPiece += 1
        }
        sendNext(&out)
    }

    /// The republish: its pieces go ahead of every piece not in flight, and the hold ends.
    mutating func missing(_ ops: [ListOperation], _ out: inout [Action]) {
        holding = false
        guard !stopped else { return }
        let front = queueStart + (inFlight ? 1 : 0)
        let pieces = Self.pieces(ops, maxBytes: configuration.maxPayload).map { p -> Piece in
            defer { nextPiece += 1 }
            return Piece(id: nextPiece, operations: p, releases: nil)
        }
        queue.insert(contentsOf: pieces, at: front)
        sendNext(&out)
    }

    mutating func published(_ piece: UInt64, _ out: inout [Action]) {
        guard inFlight, queueStart < queue.count, queue[queueStart].id == piece else {
            counts.duplicateAcknowledgements += 1
            return
        }
        let done = queue[queueStart]
        queueStart += 1
        if queueStart > 64, queueStart * 2 > queue.count {
            queue.removeFirst(queueStart)
            queueStart = 0
        }
        inFlight = false
        retryDelay = 0
        counts.published += 1
        if let t = done.releases { out.append(.release(ticket: t)) }
        sendNext(&out)
    }

    mutating func publishFailed(_ piece: UInt64, _ out: inout [Action]) {
        guard inFlight, queueStart < queue.count, queue[queueStart].id == piece else {
            counts.duplicateAcknowledgements += 1
            return
        }
        inFlight = false
        retryDelay = retryDelay == 0 ? configuration.retryFirst : min(retryDelay * 2, configuration.retryMax)
        sendNext(&out)
    }

    /// The next piece, if none is in flight.
    mutating func sendNext(_ out: inout [Action]) {
        guard !inFlight, !stopped, !holding, queueStart < queue.count else { return }
        inFlight = true
        let p = queue[queueStart]
        out.append(.publish(piece: p.id, operations: p.operations, delay: retryDelay))
    }

    /// The node stops: batches waiting for the stream are refused, the checkpoint written if it
    /// moved, the consumer stopped.
    mutating func stop(_ durable: VersionVector, _ out: inout [Action]) {
        guard !stopped else { return }
        stopped = true
        for p in queue[queueStart...] { if let t = p.releases { out.append(.refuse(ticket: t)) } }
        queue = []
        queueStart = 0
        inFlight = false
        lastDurable = durable
        checkpointIfMoved(&out)
        if follow != .idle { out.append(.stopConsumer) }
        follow = .idle
    }
}
