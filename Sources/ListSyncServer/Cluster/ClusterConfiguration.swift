import ListSyncNATS

/// Cluster mode (`listsync serve --cluster nats://HOST:PORT[,…]`, Docs/Cluster.md): the nodes
/// share documents through NATS JetStream.
public struct ClusterConfiguration: Sendable {
    /// When a client's batch is acknowledged.
    public enum Acknowledgement: String, Sendable {
        /// After the node's own fsync (the batch is published after, in the background).
        case local
        /// After the node's fsync and JetStream's acknowledgement of the publish (stored on the
        /// stream's replicas).
        case cluster
    }

    /// The NATS servers (the client fails over between them).
    public var servers: [NATSServerAddress]
    /// The acknowledgement level (default: cluster).
    public var acknowledgement: Acknowledgement = .cluster
    /// The stream that holds every document's operations (created if missing).
    public var stream = "LISTSYNC"
    /// Documents' subjects are `<prefix>.<document id>`.
    public var subjectPrefix = "listsync.doc"
    /// The key-value bucket of the document list.
    public var bucket = "listsync_docs"
    /// The stream's and the bucket's replicas (1 for one NATS server; 3 for a cluster of three).
    public var replicas = 1
    /// The stream's size limit in bytes (-1: none); with `discard: new`, a full stream refuses
    /// publishes, and batches wait, rather than losing old operations.
    public var maxBytes = -1
    /// How often the document list is read from the bucket (new documents made on other nodes).
    public var listInterval: Duration = .seconds(1)
    /// The key-value bucket of the documents' snapshots and trim leases.
    public var snapshotBucket = "listsync_snapshots"
    /// How many messages a document's subject gathers before the lease holder snapshots the
    /// document and trims the subject (0: never).
    public var trimMessages = 10_000
    /// How long a trim lease lasts without a renewal before another node may take it.
    public var leaseDuration: Duration = .seconds(15)
    /// How long a node keeps reading a document's subject after its last subscriber left.
    public var interestGrace: Duration = .seconds(30)
    /// How often a node renews its leases, trims, writes its read checkpoints and drops the
    /// documents nobody reads here any more.
    public var maintenanceInterval: Duration = .seconds(1)

    /// Cluster mode on `servers`, with the defaults above.
    public init(servers: [NATSServerAddress]) {
        self.servers = servers
    }
}
