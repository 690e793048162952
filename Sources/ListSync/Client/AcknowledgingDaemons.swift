/// Which daemon first acknowledged each of a device's own edits, by runs of its counters, and
/// which of them go again once that daemon is given up (Docs/Semantics.md §7, "An edit only a
/// forgotten daemon held"). No I/O: a device keeps one per document, durably (``SyncClient``'s
/// record), and the simulator's clients keep one each (in their ``DeviceClientMachine``).
///
/// A daemon that acknowledged an edit and was lost before it relayed it (its machine gone, its
/// operator's word given with `--forget-peer`) is the only copy of that edit: the device keeps
/// showing it, and its later edits, which depend on it, wait in the other daemons' causal
/// buffers for ever. Once its operator takes that daemon out of the device's daemons (it cannot
/// be asked), the device sends again, as unacknowledged, its own edits only that daemon
/// acknowledged and that the daemon it caught up with lacks (``firstGivenUp(after:floor:askable:parted:)``).
///
/// `Daemon` names a daemon as the device reaches it (an address; a name per index in the
/// simulator).
public struct AcknowledgingDaemons<Daemon: Hashable & Sendable>: Sendable, Equatable {
    /// The device's counters `(previous run's upTo) + 1 ... upTo` were first acknowledged by
    /// `daemon`; nil: not known (a record of an older build, which kept no runs).
    public struct Run: Sendable, Hashable {
        public var upTo: UInt64
        public var daemon: Daemon?
        public init(upTo: UInt64, daemon: Daemon?) {
            self.upTo = upTo
            self.daemon = daemon
        }
    }

    /// The runs, by increasing `upTo`, none empty.
    public private(set) var runs: [Run]

    /// Starts from the runs a record kept, or, for a record of an older build (nil), with every
    /// counter up to `acknowledged` (what it says the daemons acknowledged) of no known daemon.
    public init(runs: [Run]?, acknowledged: UInt64) {
        if let runs {
            self.runs = runs
        } else {
            self.runs = acknowledged > 0 ? [Run(upTo: acknowledged, daemon: nil)] : []
        }
    }

    /// The greatest counter a run covers (0 for none).
    public var upTo: UInt64 { runs.last?.upTo ?? 0 }

    /// The device counts its own edits up to `counter` acknowledged, told so by `daemon`: the
    /// counters past the last run are `daemon`'s. Those covered already keep their daemon (the
    /// first to hold them; a later one may hold them only relayed).
    ///
    /// - Complexity: O(1).
    public mutating func record(through counter: UInt64, by daemon: Daemon) {
        guard counter > upTo else { return }
        if let last = runs.last, last.daemon == daemon {
            runs[runs.count - 1].upTo = counter
        } else {
            runs.append(Run(upTo: counter, daemon: daemon))
        }
    }

    /// The first of the device's counters after `held` (what the daemon it caught up with holds
    /// of its edits) and after `floor` (its copy's floor: every daemon held that) that only a
    /// daemon `askable` says cannot be asked acknowledged (its operator took it out of the
    /// device's daemons), and that `parted` does not name (the daemons parted it in a merge back
    /// and made it again: sent again it would exist twice). Nil if none.
    ///
    /// - Complexity: O(r + k) for r runs and the k counters of the runs given up that `parted` names.
    public func firstGivenUp(after held: UInt64, floor: UInt64, askable: (Daemon) -> Bool,
                             parted: (UInt64) -> Bool = { _ in false }) -> UInt64? {
        var start: UInt64 = 1
        let after = max(held, floor)
        for run in runs {
            defer { start = run.upTo + 1 }
            guard run.upTo > after, let daemon = run.daemon, !askable(daemon) else { continue }
            var counter = max(start, after + 1)
            while counter <= run.upTo {
                if !parted(counter) { return counter }
                counter += 1
            }
        }
        return nil
    }

    /// Whether a run names a daemon `givenUp` says so of (``DeviceClientMachine``'s others'
    /// operations a daemon given up held: Docs/Semantics.md §7, "Others' edits only a forgotten
    /// daemon held").
    ///
    /// - Complexity: O(r) for r runs.
    public func names(where givenUp: (Daemon) -> Bool) -> Bool {
        runs.contains { run in run.daemon.map(givenUp) == true }
    }

    /// The daemon that first acknowledged the device's `counter` (nil: none known, or not
    /// acknowledged).
    ///
    /// - Complexity: O(log r).
    public func daemon(of counter: UInt64) -> Daemon? {
        var (lo, hi) = (0, runs.count)
        while lo < hi {
            let mid = (lo + hi) / 2
            if runs[mid].upTo < counter { lo = mid + 1 } else { hi = mid }
        }
        return lo < runs.count && counter > 0 ? runs[lo].daemon : nil
    }

    /// Forgets every run past `counter` (the device counts its edits after it unacknowledged
    /// again: the daemon that acknowledges them next is recorded then).
    ///
    /// - Complexity: O(r).
    public mutating func truncate(through counter: UInt64) {
        var kept: [Run] = []
        for run in runs {
            let start = (kept.last?.upTo ?? 0) + 1
            guard start <= counter else { break }
            kept.append(Run(upTo: min(run.upTo, counter), daemon: run.daemon))
        }
        runs = kept
    }
}

extension AcknowledgingDaemons.Run: Codable where Daemon: Codable {}
