/// Waiting operations on a cause the version counts and this copy never applied
/// (Docs/Semantics.md §3.8, "A history its author left"; §7, "Waiting edits on parted originals").
///
/// A version holds every counter up to each author's latest, including counters an author
/// skipped: a device that re-synced on a snapshot lacking its acknowledged edits makes its
/// unsent ones again under later counters, and the edits that only a left-out daemon held are
/// parted there and made again under that daemon's counters. An operation of another author
/// made on such an original (it saw it at the daemon that held it) waits here for it; when the
/// author's later counters arrive, the version counts the original, and the operation is handed
/// back from the causal buffer, yet its cause never came and never will as itself.
///
/// Dropping it then lost an edit the copy had acknowledged (seed 18063 of `listsync simulate
/// --daemons 2 --compact-after 10 --hide-daemon --roam 30 --crashes 2 --ops 80`: a daemon took a
/// device's 12@2 on another device's 5@3 and dropped it when that device's 18@3 came). So it waits
/// on, filed where no counter reaches (``parkedKey(_:)``), until a daemon names its cause parted:
/// a daemon then makes it again (``remakeWaiting(onParted:remakes:)``), a device drops it, its
/// edit coming made again (``dropWaiting(onParted:)``). Its own author's history left behind is
/// another matter (``leftBranch(_:_:)``): that is dropped, its author having made it again.
extension ListDocument {
    /// The first dependency of `op`, of another author, that the version counts and this copy
    /// never applied (nor collected below its floor), if any.
    ///
    /// - Complexity: O(d) for d dependencies when each names its author's latest operation
    ///   here (always held); else O(log m) more for each of the others, m log records per replica.
    func skippedCause(of op: ListOperation) -> OpID? {
        guard variant != .dropsWokenOnSkippedCause else { return nil }
        return op.deps.first { d in
            d.replica != op.id.replica && versionVector.contains(d) && d.counter != versionVector[d.replica] && !holdsExactly(d)
        }
    }

    /// Where the causal buffer files an operation waiting on a skipped cause `d`: a counter its
    /// replica never reaches, so it is never handed back by a wake.
    static func parkedKey(_ d: OpID) -> OpID { OpID(counter: .max, replica: d.replica) }

    /// What a waiting operation waits for when the buffer is rebuilt (``keepWaiting(_:)``): its
    /// first missing dependency, else its skipped cause (parked), else nothing (it is dropped:
    /// only an operation of a history its author left is so).
    ///
    /// - Complexity: O(d) for d dependencies, and O(d log m) when none is missing.
    func awaited(by op: ListOperation) -> OpID? {
        if let missing = firstMissingDependency(of: op) { return missing }
        return skippedCause(of: op).map(Self.parkedKey)
    }
}
