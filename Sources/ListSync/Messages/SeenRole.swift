/// What a replica that reports what it has seen (``SyncMessage/seen(document:replica:version:role:)``)
/// is to the document's stability (Docs/Semantics.md §7, "Who is a sender").
public enum SeenRole: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// A client that keeps no copy of its own (a `listsync` command, the web backend): every run
    /// opens the document afresh from the daemon, so its later operations are always after what
    /// the daemon holds. It holds compaction back only while it is subscribed.
    case live = 0
    /// A device that keeps a durable copy and edits offline (``SyncMessage`` from `SyncClient`):
    /// it holds compaction back, subscribed or not, until it reports again or is retired
    /// (`listsync serve --retire-after`).
    case device = 1
    /// A device as ``device`` that also compacts its own copy where the daemon compacted: the
    /// daemon tells it each floor (``SyncMessage/stable(document:version:)``), which only this
    /// role is sent (older devices say ``device`` and never see that message).
    case compactingDevice = 3
    /// A client as ``live`` that keeps a copy between runs (the `listsync` commands' kept copy,
    /// caught up by version): it holds compaction back only while it is subscribed, and the
    /// daemon answers each of its `seen` with the document's floor
    /// (``SyncMessage/stable(document:version:)``, the empty version when it was never
    /// compacted), and tells it each later floor, so that the copy compacts where the daemon
    /// did. An older daemon refuses it ("seen role 4").
    case liveCopy = 4
    /// A peer daemon's link, which relays other replicas' operations; its `replica` is the peer
    /// daemon's id. That daemon holds the document's compaction back until its stability table
    /// (``SyncMessage/stability(document:from:entries:)``) reports this daemon's version
    /// (Docs/Semantics.md §7, "Peers"); a link of an older build names replica 1, which never
    /// reports.
    case relay = 2

    /// A device that keeps a durable copy (``device`` or ``compactingDevice``).
    public var isDevice: Bool { self == .device || self == .compactingDevice }

    /// Whether the daemon tells this role its floors (``SyncMessage/stable(document:version:)``).
    public var hearsFloors: Bool { self == .compactingDevice || self == .liveCopy }

    public var description: String {
        switch self {
        case .live: return "live"
        case .device: return "device"
        case .relay: return "relay"
        case .compactingDevice: return "compacting device"
        case .liveCopy: return "live copy"
        }
    }
}
