/// For each replica, runs of ids to local versions, in counter order: how a ``SlotStore`` (the
/// list's slots) and a ``TextSlots`` (a text field's characters) find the slot of an id. Ids made
/// together by one replica in arrival order are one run, so a typed run of a thousand slots is one
/// record.
struct IDRunIndex: Sendable {
    /// Ids `counter ..< counter + count` of one replica are the slots `lv ..< lv + count`.
    struct Run: Sendable {
        var counter: UInt64
        var lv: LocalVersion
        var count: Int32
    }

    /// For each replica (by its index in `replicas`), its runs in counter order.
    private(set) var runs: [[Run]] = []
    private var replicas = ReplicaTable()
    /// The replica of the slot added last and its index in `runs` (most slots come from the
    /// same replica as the one before: no table lookup then).
    private var lastReplica: (id: ReplicaID, index: Int)?

    /// Records that ids `id ..< id + n` are the slots from `lv` on: the replica's last run grows
    /// when they continue it.
    ///
    /// - Complexity: O(1) amortized.
    @inline(__always)
    mutating func note(_ id: OpID, count n: Int, at lv: LocalVersion) {
        let k: Int
        if let last = lastReplica, last.id == id.replica {
            k = last.index
        } else {
            k = replicas.insert(id.replica)
            if k == runs.count { runs.append([]) }
            lastReplica = (id.replica, k)
        }
        if let tail = runs[k].last, tail.counter &+ UInt64(tail.count) == id.counter, tail.lv.advanced(by: tail.count) == lv {
            runs[k][runs[k].count - 1].count += Int32(n)
        } else {
            runs[k].append(Run(counter: id.counter, lv: lv, count: Int32(n)))
        }
    }

    /// Grows the run noted last by `n` ids and slots (the caller knows they continue it).
    @inline(__always)
    mutating func extendLast(by n: Int) {
        let k = lastReplica!.index
        runs[k][runs[k].count - 1].count += Int32(n)
    }

    /// Whether the run noted last ends right before slot `lv` (for assertions).
    func lastRunEnds(at lv: LocalVersion) -> Bool {
        guard let k = lastReplica?.index, let tail = runs[k].last else { return false }
        return tail.lv.advanced(by: tail.count) == lv
    }

    /// The local version of the slot with this id, or nil if unknown.
    ///
    /// - Complexity: O(log r) for r id runs of the replica.
    func lv(of id: OpID) -> LocalVersion? {
        var hint = Hint()
        return lv(of: id, hint: &hint)
    }

    /// Where a look-up found its id last: the replica's index and the id run. Look-ups in a row
    /// mostly find ids of the same id run as the one before, or of one next to it (a history
    /// load: about two thirds of the look-ups of the automerge-paper trace's), which
    /// ``lv(of:hint:)`` checks before it searches. Only a guess: any value gives the same answers.
    struct Hint {
        var replica: Int32 = -1
        var run: Int32 = 0
    }

    /// ``lv(of:)``, checking the id run `hint` names and its two neighbours before searching;
    /// `hint` is left naming the id run holding `id`, when found.
    ///
    /// - Complexity: O(1) when `id` is in one of those three runs, else O(log r) for r id runs of
    ///   the replica.
    @inline(__always)
    func lv(of id: OpID, hint: inout Hint) -> LocalVersion? {
        let k: Int
        if let last = lastReplica, last.id == id.replica {
            k = last.index  // most look-ups are of the replica whose slot was added last
        } else {
            guard let found = replicas.index(of: id.replica) else { return nil }
            k = found
        }
        return runs[k].withUnsafeBufferPointer { list -> LocalVersion? in
            /// The slot of `id` in id run `i`, if there.
            func slot(inRun i: Int) -> LocalVersion? {
                let r = list[i]
                let off = id.counter &- r.counter
                return id.counter >= r.counter && off < UInt64(r.count) ? r.lv.advanced(by: Int32(off)) : nil
            }
            if Int(hint.replica) == k, !list.isEmpty {
                let h = Swift.min(Swift.max(Int(hint.run), 0), list.count - 1)
                if let lv = slot(inRun: h) { return lv }
                if h + 1 < list.count, let lv = slot(inRun: h + 1) {
                    hint.run = Int32(truncatingIfNeeded: h + 1)
                    return lv
                }
                if h > 0, let lv = slot(inRun: h - 1) {
                    hint.run = Int32(truncatingIfNeeded: h - 1)
                    return lv
                }
            }
            let lo = list.partitionPoint { $0.counter <= id.counter }
            if lo == 0 { return nil }
            guard let lv = slot(inRun: lo - 1) else { return nil }
            (hint.replica, hint.run) = (Int32(truncatingIfNeeded: k), Int32(truncatingIfNeeded: lo - 1))
            return lv
        }
    }
}
