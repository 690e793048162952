import ListCRDT

/// Following (Docs/Cluster.md, "Interest" and "What a node reads after a restart"): while the
/// document has interest here, the node reads its subject in stream order from its position,
/// after the cluster's snapshot when the copy here lacks what the snapshot covers. A message at
/// or below the position (redelivered) is not applied twice. The first follow since the start
/// learns where the subject ends; once read up to there, the node republishes what it has and the
/// stream lacks (batches appended here whose publish never succeeded).
extension ClusterMachine {
    /// Starts following if not already: the snapshot is checked first (reading from the position
    /// could skip what a trim removed).
    mutating func beginFollow(now: UInt64, _ out: inout [Action]) {
        guard !stopped, follow == .idle else { return }
        follow = .preparing
        requestCheck(&out)
    }

    mutating func requestCheck(_ out: inout [Action]) {
        guard check == .none else {
            recheck = true
            return
        }
        check = .checking
        out.append(.checkSnapshot)
    }

    mutating func snapshotChecked(_ head: Position?, _ documentVersion: VersionVector, _ out: inout [Action]) {
        guard check == .checking else { return }
        if let head, !documentVersion.includes(head.version) {
            check = .loading
            out.append(.loadSnapshot(head))
            return
        }
        if let head { cover(head, &out) }
        checkDone(&out)
    }

    /// The position moves past what a snapshot covers.
    mutating func cover(_ head: Position, _ out: inout [Action]) {
        read.version.formUnion(head.version)
        if head.sequence > read.sequence { read.sequence = head.sequence }
        sinceSnapshot = 0
        caughtUp(&out)
    }

    /// Once read up to where the subject ended at the first follow: the republish.
    mutating func caughtUp(_ out: inout [Action]) {
        guard let target = catchUpTarget, read.sequence >= target else { return }
        catchUpTarget = nil
        republish(&out)
    }

    mutating func checkDone(_ out: inout [Action]) {
        check = .none
        if recheck {
            recheck = false
            requestCheck(&out)
            return
        }
        guard follow == .preparing else { return }
        if followedOnce {
            follow = .starting
            out.append(.startConsumer(from: read.sequence + 1))
        } else {
            follow = .readingEnd
            out.append(.readSubjectEnd)
        }
    }

    /// The snapshot could not be checked: a consumer reading on could skip what a trim removed,
    /// so it stops, and the next follow checks again.
    mutating func snapshotUnreadable(_ out: inout [Action]) {
        check = .none
        recheck = false
        if follow == .starting || follow == .following { out.append(.stopConsumer) }
        if follow != .idle && follow != .readingEnd { follow = .idle }
    }

    mutating func subjectEnded(_ last: UInt64, _ out: inout [Action]) {
        guard follow == .readingEnd else { return }
        followedOnce = true
        if last <= read.sequence { republish(&out) } else { catchUpTarget = last }
        follow = .starting
        out.append(.startConsumer(from: read.sequence + 1))
    }

    mutating func message(_ sequence: UInt64, _ ops: [ListOperation]?, _ out: inout [Action]) {
        guard follow == .following || follow == .starting else { return }
        guard sequence > read.sequence else {
            counts.duplicateMessages += 1
            return
        }
        read.sequence = sequence
        sinceSnapshot += 1
        if let ops {
            for op in ops { read.version.observe(op.lastID) }
            out.append(.apply(ops))
        } else {
            counts.refused += 1
        }
        caughtUp(&out)
    }

    mutating func republish(_ out: inout [Action]) {
        counts.republishes += 1
        out.append(.republish(since: read.version))
    }

    mutating func headWritten(_ out: inout [Action]) {
        guard follow != .idle else { return }
        requestCheck(&out)
    }

    /// Interest, the checkpoint, the end of following, the lease and the trim.
    mutating func tick(_ now: UInt64, _ durable: VersionVector, _ subscribed: Bool, _ out: inout [Action]) {
        lastDurable = durable
        if subscribed || publishesPending > 0 || catchUpTarget != nil { lastInterest = now }
        guard !stopped else { return }
        let recent = lastInterest.map { ClusterLease.elapsed(since: $0, now) < configuration.interestGrace } ?? false
        let wanted = recent || (unpublished && !followedOnce)
        switch follow {
        case .idle:
            if wanted { beginFollow(now: now, &out) }
        case .following:
            checkpointIfMoved(&out)
            guard wanted else {
                out.append(.stopConsumer)
                follow = .idle
                if let h = lease.held { out.append(.releaseLease(revision: h.revision)) }
                lease.lost()
                return
            }
            tendLease(now, &out)
        case .preparing, .readingEnd, .starting:
            break
        }
    }

    /// Writes the read checkpoint if it moved and what it covers is durable here.
    mutating func checkpointIfMoved(_ out: inout [Action]) {
        guard !checkpointInFlight, read.sequence > checkpointed, lastDurable.includes(read.version) else { return }
        checkpointInFlight = true
        out.append(.writeCheckpoint(read))
    }
}
