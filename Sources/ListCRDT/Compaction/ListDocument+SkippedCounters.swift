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
    /// its floor skipped, and those its log's operations skip. An operation's counter is its
    /// causes' greatest plus one (its author's clock is its copy's greatest counter), unless its
    /// author had used counters its copy no longer holds: a device that re-synced from a
    /// snapshot drops its edits made before the snapshot's floor and makes its unsent ones again
    /// under counters after all of them, and its first edit then is at least two past its causes'
    /// (``clockPast(_:)``). For each operation of the log whose counter so jumps, the counters of
    /// its replica after the greatest this document holds below it are skipped. A counter no
    /// operation ever had may be among them (harmless: nothing holds it); the runs stay few, one
    /// per such jump, where naming every counter a replica's Lamport clock passed over would be
    /// one per edit made after another replica's.
    ///
    /// - Complexity: O(m × d + r + j × g) for m log records of d dependencies, r replicas, and
    ///   j jumps among g held runs of their replica.
    func skippedCounters() -> [ReplicaID: [ClosedRange<UInt64>]] {
        var jumps: [ReplicaID: [UInt64]] = [:]
        for r in 0..<log.records.count {
            let id = log.id(record: r, operation: 0)
            var causes: UInt64 = 0
            for d in log.deps(record: r, operation: 0) { causes = max(causes, d.counter) }
            if id.counter > causes &+ 1 { jumps[id.replica, default: []].append(id.counter) }
        }
        var skipped = compaction?.skipped ?? [:]
        let floor = compaction?.version ?? VersionVector()
        for (replica, counters) in jumps {
            // What this document holds of the replica: below its floor, less what it skipped; the log.
            let top = floor[replica]
            let below: [ClosedRange<UInt64>] = top == 0 ? [] : Self.subtracting(skipped[replica] ?? [], from: 1...top)
            let held = Self.joined((below + log.counterRuns(of: replica)).sorted { $0.lowerBound < $1.lowerBound })
            var runs = skipped[replica] ?? []
            for counter in counters {
                let last = held.last { $0.lowerBound < counter }.map { min($0.upperBound, counter - 1) } ?? 0
                if last &+ 1 < counter { runs.append((last + 1)...(counter - 1)) }
            }
            if !runs.isEmpty { skipped[replica] = Self.joined(runs.sorted { $0.lowerBound < $1.lowerBound }) }
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
