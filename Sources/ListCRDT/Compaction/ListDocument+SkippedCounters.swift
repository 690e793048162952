// The counters a compaction floor counts that the copy never held (Docs/Semantics.md §7, "A
// floor that counts what it skipped"). A version, and so a floor, counts every counter of a
// replica up to its greatest. A device that re-synced from a peer's snapshot drops its
// acknowledged edits made before that snapshot's floor (only a daemon left out of the floor took
// them, and that daemon makes them again when it merges back) and goes on under later counters;
// a copy that applies those later edits counts the dropped ones too, and a floor it compacts at
// counts them. The floor therefore remembers them, per replica, as runs (`skipped`), and the
// compacted snapshot carries them (version 12, Docs/WireFormat.md §5.12), so that a merge back
// onto it (``ListDocument/heldOperations()``) takes them for lacking, not held, and makes the
// left-out daemon's copies of them again.

extension ListDocument {
    /// The counters, per replica, that this document's compaction floor counts but that it never
    /// held (a replica's edits dropped after a re-sync, its later ones applied here): runs in
    /// increasing order, apart (never touching). Empty for a document never compacted, and for
    /// one whose floor counts only what it held.
    public var floorSkipped: [ReplicaID: [ClosedRange<UInt64>]] { compaction?.skipped ?? [:] }

    /// Whether this document holds the operation of `id` below its compaction floor: the floor
    /// counts it and did not skip it.
    ///
    /// - Complexity: O(g) for the g skipped runs of `id`'s replica (none, nearly always).
    func floorHolds(_ id: OpID) -> Bool {
        guard let floor = compaction, floor.version.contains(id) else { return false }
        return !(floor.skipped[id.replica]?.contains { $0.contains(id.counter) } ?? false)
    }

    /// The counters a floor at this document's version would count that it never held: those
    /// its floor skipped, and those above its floor that no operation of its log holds.
    ///
    /// - Complexity: O(m + r) for m log records and r replicas.
    func skippedCounters() -> [ReplicaID: [ClosedRange<UInt64>]] {
        let floor = compaction?.version ?? VersionVector()
        var skipped: [ReplicaID: [ClosedRange<UInt64>]] = [:]
        for (replica, top) in versionVector.entries {
            let held = log.counterRuns(of: replica)
            var runs: [ClosedRange<UInt64>] = []
            // Below the floor: what it skipped, less what the log holds (nothing, normally).
            for run in compaction?.skipped[replica] ?? [] { runs += Self.subtracting(held, from: run) }
            let above = floor[replica] + 1
            if above <= top { runs += Self.subtracting(held, from: above...top) }
            if !runs.isEmpty { skipped[replica] = Self.joined(runs) }
        }
        return skipped
    }

    /// `run` less the counters of `held` (runs in increasing order).
    ///
    /// - Complexity: O(h) for h runs held.
    static func subtracting(_ held: [ClosedRange<UInt64>], from run: ClosedRange<UInt64>) -> [ClosedRange<UInt64>] {
        var left: [ClosedRange<UInt64>] = []
        var next = run.lowerBound
        for h in held where h.upperBound >= next && h.lowerBound <= run.upperBound {
            if h.lowerBound > next { left.append(next...(h.lowerBound - 1)) }
            guard h.upperBound < run.upperBound else { return left }
            next = h.upperBound + 1
        }
        left.append(next...run.upperBound)
        return left
    }

    /// `runs` (in increasing order, not overlapping) with touching runs joined.
    ///
    /// - Complexity: O(g) for g runs.
    static func joined(_ runs: [ClosedRange<UInt64>]) -> [ClosedRange<UInt64>] {
        var out: [ClosedRange<UInt64>] = []
        for run in runs {
            if let last = out.last, last.upperBound &+ 1 >= run.lowerBound {
                out[out.count - 1] = last.lowerBound...max(last.upperBound, run.upperBound)
            } else {
                out.append(run)
            }
        }
        return out
    }

    /// This document with its floor's skipped counters forgotten: its floor counts them as held,
    /// as a build before version 12 of the compacted snapshot took every floor. For the variant
    /// that shows what that lost (a merge back dropped a left-out daemon's waiting edits the
    /// floor counted without holding).
    package func forgettingFloorSkipped() -> ListDocument {
        var doc = self
        doc.compaction?.skipped = [:]
        return doc
    }
}

/// The skipped counters of a compacted snapshot of version 12 (Docs/WireFormat.md §5.12).
enum SkippedCountersCoding {
    /// `replicas:varint`, then per replica in increasing id order: its id (`varint`), `runs:varint`,
    /// and per run its first counter less the previous run's last (0 before the first) and its
    /// length less one.
    ///
    /// - Complexity: O(g) for g runs.
    static func encode(_ skipped: [ReplicaID: [ClosedRange<UInt64>]], to w: inout WireWriter) {
        let replicas = skipped.keys.sorted()
        w.count(replicas.count)
        for replica in replicas {
            let runs = skipped[replica]!
            w.varint(replica.rawValue)
            w.count(runs.count)
            var previous: UInt64 = 0
            for run in runs {
                w.varint(run.lowerBound - previous)
                w.varint(run.upperBound - run.lowerBound)
                previous = run.upperBound
            }
        }
    }

    /// Reads what ``encode(_:to:)`` wrote, checking it against the floor's `version`: replicas
    /// in increasing order that the floor counts, at least one run each, runs apart (not
    /// touching), in increasing order, within the floor's counters, and none holding a head of
    /// the floor (`frontier`, which it holds).
    ///
    /// - Complexity: O(g + h) for g runs and h heads.
    static func decode(_ r: inout WireReader, version: VersionVector, frontier: [OpID]) throws(WireError)
        -> [ReplicaID: [ClosedRange<UInt64>]] {
        var skipped: [ReplicaID: [ClosedRange<UInt64>]] = [:]
        let n = try r.count(minBytes: 3)
        var last: ReplicaID?
        for _ in 0..<n {
            let at = r.offset
            let replica = ReplicaID(try r.varint())
            guard last.map({ $0 < replica }) ?? true else { throw .invalidValue("skipped counters' replicas not in increasing order", offset: at) }
            last = replica
            let top = version[replica]
            let k = try r.count(minBytes: 2)
            guard k > 0 else { throw .invalidValue("a replica with no skipped run", offset: at) }
            var runs: [ClosedRange<UInt64>] = []
            var previous: UInt64 = 0
            for _ in 0..<k {
                let at = r.offset
                let gap = try r.varint(), extra = try r.varint()
                // The first run starts at 1 or later; every other one leaves a counter held between.
                guard gap >= (runs.isEmpty ? 1 : 2), gap <= top, previous <= top - gap, extra < top - previous - gap + 1 else {
                    throw .invalidValue("a skipped run not within the floor, or touching the one before", offset: at)
                }
                let run = (previous + gap)...(previous + gap + extra)
                runs.append(run)
                previous = run.upperBound
            }
            skipped[replica] = runs
        }
        for head in frontier where skipped[head.replica]?.contains(where: { $0.contains(head.counter) }) ?? false {
            throw .invalidValue("the floor's head \(head) is a skipped counter", offset: r.offset)
        }
        return skipped
    }
}
