/// The order of some trees' slots kept aside, as linked lists, while a history loads into an
/// empty document; the trees are built from it once, packed, at the end
/// (``SlotForest/rebuild(hiding:pending:)``).
///
/// A history's insert runs mostly go right after their left origin, with nothing between it and
/// their right origin (typing). Placing such a run is then one link written: no leaf to find,
/// split or count. A tree is *pending* from its first run placed here until the order is settled;
/// its slots are in the list only, never in the forest (a tree becomes pending only while the
/// forest holds none of its slots). The slots of other trees are not in the lists.
///
/// Invariants: for a pending tree `t`, following ``head(_:)`` and ``next(_:)`` from it visits each
/// slot placed in `t` exactly once and ends at ``LocalVersion/none``; ``count(_:)`` is their number.
struct PendingOrder: Sendable {
    /// Per slot `lv` of a pending tree: the slot after it, as its distance from `lv + 1` (so 0, what
    /// new room is filled with, says it is `lv + 1`: the slots of a run are linked without a write;
    /// the end of the list, ``LocalVersion/none``, is `-(lv + 2)`). Unused for other slots.
    private var skips: [Int32] = []
    /// Per tree: its first slot, ``LocalVersion/none`` while it is empty or not pending.
    private var heads: [LocalVersion] = []
    /// Per tree: its slot count, and whether it is pending.
    private var counts: [Int32] = []
    private var pending: [Bool] = []

    /// An empty order with room for the links of `slots` slots (more are added as needed).
    init(room slots: Int = 0) {
        skips = [Int32](repeating: 0, count: slots + Self.ends)
        skips.withUnsafeMutableBufferPointer { $0[slots...].update(repeating: Self.end) }
    }

    /// ``skips`` ends with this many ``end``s, after the room for links, so that a scan for the
    /// end of a run (a link other than 0) stops without a bounds check, two links at a time.
    private static let ends = 2
    private static let end = Int32.min

    /// Whether tree `t`'s slots are kept here.
    @inline(__always) func isPending(_ t: Int32) -> Bool { Int(t) < pending.count && pending[Int(t)] }

    /// Whether no tree is pending (asked before every operation of a load that takes the
    /// general path: O(1)).
    var isEmpty: Bool { pendingTrees == 0 }
    /// The number of trees pending.
    private var pendingTrees = 0

    /// The number of slots of pending tree `t` (0 when it is not pending).
    @inline(__always) func count(_ t: Int32) -> Int { isPending(t) ? Int(counts[Int(t)]) : 0 }

    /// The first slot of pending tree `t` (``LocalVersion/none``: it is empty).
    @inline(__always) func head(_ t: Int32) -> LocalVersion { isPending(t) ? heads[Int(t)] : .none }

    /// The slot after `lv` in its pending tree (``LocalVersion/none``: `lv` is the last).
    @inline(__always) func next(_ lv: LocalVersion) -> LocalVersion {
        precondition(lv.exists && lv.int < skips.count - Self.ends, "slot \(lv.raw) is not in a pending tree")
        return lv.advanced(by: 1 &+ skips[lv.int])
    }

    /// Makes tree `t` pending (empty).
    mutating func begin(_ t: Int32) {
        while pending.count <= Int(t) {
            pending.append(false)
            heads.append(.none)
            counts.append(0)
        }
        assert(!pending[Int(t)], "tree \(t) is pending already")
        pending[Int(t)] = true
        pendingTrees += 1
    }

    /// Places the new slots `lv ..< lv + n` (no slot at or after `lv` was placed before) in pending
    /// tree `t`, in order, right after slot `after` (``LocalVersion/none``: at the start), whose
    /// follower is `following` (as ``next(_:)`` or ``head(_:)`` says).
    ///
    /// - Complexity: O(1), or O(m) amortized when the room for links grows by m.
    @inline(__always)
    mutating func insert(_ t: Int32, _ lv: LocalVersion, count n: Int, after: LocalVersion, following: LocalVersion) {
        assert(isPending(t) && n > 0 && lv.exists && (!after.exists || after < lv), "slots placed out of order")
        let last = lv.int + n - 1
        if last >= skips.count - Self.ends {
            // The room grows (at least doubles); the ends move to its end.
            let room = skips.count - Self.ends
            skips.removeLast(Self.ends)
            skips.append(contentsOf: repeatElement(0, count: Swift.max(last + 1 - room, room)))
            skips.append(contentsOf: repeatElement(Self.end, count: Self.ends))
        }
        // Slots lv ..< last link to the next by the zeros they hold: nothing placed them before.
        assert(skips[lv.int ..< last].allSatisfy { $0 == 0 }, "links of new slots already written")
        skips[last] = following.distance(from: LocalVersion(last + 1))
        if after.exists { skips[after.int] = lv.distance(from: after.advanced(by: 1)) } else { heads[Int(t)] = lv }
        counts[Int(t)] += Int32(n)
    }

    /// Calls `body(first, count)` for each run of consecutive slots of pending tree `t`, in order.
    ///
    /// - Complexity: O(n) for the tree's n slots.
    func forEachRun(_ t: Int32, _ body: (LocalVersion, Int) -> Void) {
        var lv = head(t), seen = 0
        skips.withUnsafeBufferPointer { skips in
            while lv.exists {
                precondition(lv.int < skips.count - Self.ends, "pending tree \(t) links to slot \(lv.raw), which has no link")
                var end = lv.int  // the run's last slot
                // Two links at a time while both are zeros (typed runs are long); the two ends
                // stop the scans.
                let base = UnsafeRawPointer(skips.baseAddress!)
                while base.loadUnaligned(fromByteOffset: end &* 4, as: UInt64.self) == 0 { end &+= 2 }
                if skips[end] == 0 { end &+= 1 }
                body(lv, end + 1 - lv.int)
                seen += end + 1 - lv.int
                lv = LocalVersion(end + 1).advanced(by: skips[end])
            }
        }
        precondition(seen == Int(counts[Int(t)]), "pending tree \(t) lists \(seen) slots, not \(counts[Int(t)])")
    }
}
