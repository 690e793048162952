import ListStore
import ListCRDT
import ListSync
import ListSyncTCP

/// Everything `listsync serve` can be told (Docs/Daemon.md, "Flags and environment").
public struct DaemonConfiguration: Sendable {
    /// The port the daemon listens on unless told otherwise.
    public static let defaultPort: UInt16 = 7450

    /// The data folder (documents, key, lock).
    public var dataFolder: String
    /// Where to listen.
    public var listenHost = "127.0.0.1"
    public var listenPort: UInt16 = DaemonConfiguration.defaultPort
    /// The key file; `nil`: `<dataFolder>/key`, created on first start.
    public var keyFile: String?
    /// Daemons to keep a connection to and sync every document with.
    public var peers: [(host: String, port: UInt16)] = []
    /// The admin HTTP address (`/healthz`, `/readyz`, `/metrics`); `nil`: none.
    public var admin: (host: String, port: UInt16)?
    /// The file holding the admin port's bearer token (`--admin-token-file`); with one, every
    /// admin path but `/healthz` asks for the token, on any address. `nil`: no token on loopback,
    /// and `<dataFolder>/admin-token` (created on first start) on any other address.
    public var adminTokenFile: String?
    /// How often the bytes in the data folder are sampled (for status and `/metrics`), at least:
    /// a walk that takes longer waits 100 times its duration.
    public var diskUsageInterval: Duration = .seconds(30)
    /// LAN discovery (`--discover`); `nil`: off. Static peers are always used as well.
    public var discovery: Discovery?

    /// Where discovery listens and announces.
    public struct Discovery: Sendable {
        /// The UDP port announcements are received on.
        public var port: UInt16 = 7451
        /// Where announcements go (default: the broadcast address, on `port`).
        public var announceTo: [(host: String, port: UInt16)] = []
        /// How often to announce.
        public var interval: Duration = .seconds(30)
        /// The address announced for peers to dial (`--announce-address`); `nil`: the listening
        /// address, or, when that is every interface, the first interface address that is not
        /// loopback (Docs/Security.md, "Discovery").
        public var announceAddress: String?
        /// How far an announcement's time may be from this daemon's clock, either way.
        public var window: Duration = .seconds(30)
        /// A discovered peer link is dropped once no announcement has named it for this many
        /// intervals and its own last attempts to connect failed.
        public var silentIntervals = 3
        /// Connection attempts that must have failed in a row, beside the silence, to drop a link.
        public var failedAttempts = 3
        /// Discovered peer links at most (static `--peer`s not counted).
        public var maxPeers = 64
        /// Discovery with the defaults.
        public init() {}
    }

    /// Connection limits and timings.
    public var tcp = TCPOptions()
    /// Cluster mode (Docs/Cluster.md): documents shared through NATS JetStream; nil: off.
    public var cluster: ClusterConfiguration?
    /// A document with no subscriber unused for this long is unloaded.
    public var idleUnload: Duration = .seconds(300)
    /// Documents resident at once (the least recently used idle ones are unloaded first).
    public var maxResidentDocuments = 1_000
    /// When documents are compacted (Docs/Daemon.md, "Compaction"); nil: never. A daemon with
    /// peers (`--peer`, discovery) or in a cluster never compacts: its peers relay operations of
    /// replicas it cannot see (Docs/Semantics.md §7).
    public var compaction: CompactionPolicy? = CompactionPolicy()
    /// Seconds of the wall clock, for the retire period (tests move it).
    public var wallClock: @Sendable () -> UInt64 = CompactionPolicy.wallClock
    /// A document whose log grows past this (and past its last snapshot's size) is snapshotted:
    /// while resident, after the batch that passed it; and when it is unloaded or at shutdown.
    public var snapshotLogBytes: Int64 = defaultSnapshotLogBytes
    /// 4 MiB.
    public static let defaultSnapshotLogBytes: Int64 = 4 << 20
    /// The wait between attempts to reach a peer (`--peer`, or discovered): 0.25 s doubling to 2 s,
    /// jittered; reset by every connection that completes its handshake. Short on purpose: peers
    /// are on a LAN, a refused attempt costs a SYN, and after a partition heals the link is back
    /// within about 2 s at most (with 0.5 s doubling to 15 s it could take as long again as the
    /// partition lasted: Docs/Reliability.md, "Fault proxy").
    public var peerBackoff = Backoff(initial: .milliseconds(250), maximum: .seconds(2))
    /// How often peers exchange anti-entropy hellos.
    public var antiEntropyInterval: Duration = .seconds(10)
    /// The causal buffer of each hosted document (operations waiting for their dependencies):
    /// past it a batch's waiting operations are refused, and the sender is told why.
    public var pendingLimits = PendingLimits(maxOperations: 100_000, maxBytes: 32 << 20)
    /// Documents in the data folder at most.
    public var maxDocuments = 100_000
    /// Where events go (one call per event: its name and fields); `nil`: nowhere.
    public var log: (@Sendable (String, [String: String]) -> Void)?
    /// Batches of operations each connection may send (nil: no limit); over it a batch is refused
    /// with a `.limit` error saying so (see ``RateLimit``).
    public var rateLimit: RateLimit? = .standard
    /// The file-call funnel of the data folder and every store (tests pass one whose hook fails
    /// calls with `ENOSPC` or `EIO`; see Docs/Reliability.md, "Disk full").
    public var fileSystem: FileSystem = .system
    /// The data folder's one write-ahead log for every document (Docs/Storage.md, "The shared
    /// log"), with its settings; nil: a log per document, as before it (kept for comparisons; a
    /// folder that has a shared log keeps using it).
    public var sharedLog: SharedLogOptions? = SharedLogOptions()
    /// Once the shared log has more segments than this, the documents holding its oldest segment
    /// are snapshotted (loaded first if they are not resident), so that the segment can go.
    public var checkpointSegments = 4

    /// A configuration for `dataFolder` with the defaults.
    public init(dataFolder: String) {
        self.dataFolder = dataFolder
    }
}
