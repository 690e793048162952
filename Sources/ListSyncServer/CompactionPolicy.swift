import Foundation
import ListCRDT
import ListSync

/// When the daemon compacts a document and whom it stops waiting for (Docs/Daemon.md,
/// "Compaction"; the rule in Docs/Semantics.md §7).
public struct CompactionPolicy: Sendable, Equatable {
    /// A sender not heard of for this long is retired (`--retire-after`): it no longer holds
    /// stability back, and if it comes back behind the floor it re-syncs from a snapshot.
    public var retireAfter: Duration = .seconds(30 * 86_400)
    /// The least number of operations logged since the last compaction worth compacting for.
    public var minOperations = 10_000
    /// The least time between two compactions of one document.
    public var interval: Duration = .seconds(60)
    /// The bytes trigger (`--compact-dead-share`, `--compact-dead-floor`): a document also
    /// compacts once the bytes a compaction would free (``ListCRDT/ListDocument/reclaimableBytes``)
    /// reach this share of its bytes (nil: the bytes trigger is off) ...
    public var reclaimableShare: Double? = CompactionTrigger.defaultShare
    /// ... and at least this many bytes.
    public var reclaimableFloor = CompactionTrigger.defaultFloor
    /// Peer daemons the operator declared gone for good (`--forget-peer`): they no longer hold
    /// compaction back, on this daemon and, through the gossip, on every other (Docs/Semantics.md
    /// §7, "Forgetting a daemon").
    public var forgottenPeers: Set<ReplicaID> = []

    /// The defaults: retire after 30 days, compact past 10,000 operations or once half the
    /// document's bytes (64 KiB at least) would be freed, at most once a minute.
    /// Whether a busy document with no peer is compacted at a stable prefix (on by default;
    /// `--compact-quiescent-only` turns it off: ``ListSync/CompactionRule/stablePrefixes``).
    public var stablePrefixes = true

    public init() {}

    /// A policy with these settings.
    public init(retireAfter: Duration, minOperations: Int, interval: Duration) {
        precondition(minOperations >= 1, "compacting for \(minOperations) operations")
        self.retireAfter = retireAfter
        self.minOperations = minOperations
        self.interval = interval
    }

    /// ``retireAfter`` in whole seconds (0: a sender is retired as soon as it is silent).
    var retireAfterSeconds: UInt64 { UInt64(max(0, retireAfter.components.seconds)) }
    /// ``interval`` in nanoseconds.
    var intervalNanoseconds: UInt64 {
        let (s, a) = interval.components
        return UInt64(max(0, s)) * 1_000_000_000 + UInt64(max(0, a / 1_000_000_000))
    }

    /// The rule the document core decides by (``ListSync/DocumentCore/housekeeping(stabilityNow:now:rule:)``):
    /// retirement in wall-clock seconds, intervals in monotonic nanoseconds.
    func rule(gossipInterval: UInt64) -> CompactionRule {
        var rule = CompactionRule(retireAfter: retireAfterSeconds, minOperations: minOperations, interval: intervalNanoseconds,
                                  gossipInterval: gossipInterval, forgottenPeers: forgottenPeers,
                                  reclaimableFloor: reclaimableShare == nil ? nil : reclaimableFloor,
                                  reclaimableShare: reclaimableShare ?? 1)
        rule.stablePrefixes = stablePrefixes
        return rule
    }

    /// Seconds of the wall clock (the retire period must survive restarts, so not a monotonic clock).
    static let wallClock: @Sendable () -> UInt64 = { UInt64(max(0, Date().timeIntervalSince1970)) }
}
