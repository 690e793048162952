import ListCRDT
import ListStore
@_spi(Testing) import ListSync

/// A daemon's disk in the simulator: its shared log as bytes in the production format
/// (`SharedLogFormat`: a segment header, then records tagged with the document), split into what
/// is synced and what is only written. A crash keeps the synced bytes and a random prefix of the
/// rest (a torn write); recovery scans them with the production scanner (`SharedLogScan`) and
/// decodes the document's records as a load does.
struct SimulatedDisk {
    let document: DocumentID
    /// Bytes made durable by a sync.
    private(set) var synced: [UInt8]
    /// Bytes written, not yet synced, with the tickets they carry.
    private(set) var unsynced: [(ticket: UInt64, bytes: [UInt8])] = []
    /// When the running sync completes (virtual ms), if one runs.
    var syncDue: UInt64?
    /// The snapshot of the last compaction (format 3), durable: the log after it starts afresh,
    /// as the store's next generation does (``DocumentStore/compact(_:)``). Nil: never compacted.
    private(set) var base: [UInt8]?
    /// Bytes of operations written since the disk was made (compactions and crashes aside).
    private(set) var bytesWritten = 0
    /// The operations the last recovery replayed from the log.
    private(set) var replayed: [ListOperation] = []

    init(document: DocumentID, epoch: UInt64) {
        self.document = document
        synced = SharedLogFormat.header(base: 0) + SharedLogFormat.epochRecord(epoch, document: document)
    }

    /// Writes `ops` (not durable yet).
    mutating func write(ticket: UInt64, _ ops: [ListOperation]) {
        // Every operation the core hands over encodes: it came from the decoder.
        let bytes = (try? SharedLogFormat.records(for: ops, document: document)) ?? []
        precondition(!bytes.isEmpty, "a batch of \(ops.count) operations did not encode")
        unsynced.append((ticket, bytes))
        bytesWritten += bytes.count
    }

    /// The sync completes: every written byte is durable; returns the tickets, in order.
    mutating func sync() -> [UInt64] {
        for u in unsynced { synced += u.bytes }
        defer { unsynced = [] }
        return unsynced.map(\.ticket)
    }

    /// A crash: the unsynced bytes are lost but for a prefix of `keep` bytes (a torn write).
    mutating func crash(keep: Int) {
        let rest = unsynced.flatMap(\.bytes)
        synced += rest.prefix(keep)
        unsynced = []
        syncDue = nil
    }

    /// A compaction: `snapshot` becomes the base and the log starts afresh, at once and durably
    /// (the store writes the snapshot and the new generation before dropping the old one; the
    /// host compacts only when nothing is in flight, so nothing is unsynced).
    mutating func compact(snapshot: [UInt8], epoch: UInt64) {
        precondition(unsynced.isEmpty && syncDue == nil, "a compaction with unsynced writes")
        base = snapshot
        synced = SharedLogFormat.header(base: 0) + SharedLogFormat.epochRecord(epoch, document: document)
    }

    /// Bytes not yet synced.
    var unsyncedCount: Int { unsynced.reduce(0) { $0 + $1.bytes.count } }

    /// Recovery as the store does it: scan, cut at the first bad record, replay into a document.
    mutating func recover(replica: ReplicaID, limits: PendingLimits) -> ListDocument {
        let scan = (try? SharedLogScan.scan(synced, base: 0))!
        synced = Array(synced.prefix(scan.validLength))
        replayed = []
        var doc = ListDocument(replica: replica)
        if let base {
            // The store loads the generation's snapshot, then replays its log.
            doc = try! ListDocument(snapshot: base, replica: replica)
        }
        doc.pendingLimits = limits
        for entry in scan.entries where entry.document == document {
            let start = Int(entry.position)
            let record = SharedLogScan.decode(synced[start..<start + entry.length], maxValueSize: doc.maxValueSize)
            if case let .success((_, .operations(ops))) = record {
                _ = doc.receive(ops)
                replayed += ops
            }
        }
        return doc
    }
}

/// One daemon in the simulator: the production ``DocumentCore`` of the document, a production
/// ``ServerSession`` per incoming connection, a production ``PeerSession`` per outgoing link, and
/// a ``SimulatedDisk``. Node numbers of the other ends are its subscriber numbers.
struct SimulatedDaemon {
    let node: Int
    let replica: ReplicaID
    let epoch: UInt64
    var core: DocumentCore
    var disk: SimulatedDisk
    /// The stability as last written to disk (the host writes it when it changes in a way that
    /// matters, and before each compaction); a crash restarts from it.
    var savedStability = DocumentStability()
    var servers: [Int: ServerSession] = [:]
    var links: [Int: PeerSession] = [:]
    /// Operation ids this daemon acknowledged to a client, with the batch.
    var acknowledged: Set<OpID> = []
    /// Batches each client has waiting for an ack here: (client node, batch) → last ids.
    var awaitingAck: [Int: [UInt64: [OpID]]] = [:]
    static let limits = PendingLimits(maxOperations: 100_000, maxBytes: 32 << 20)

    init(node: Int, document: DocumentID, epoch: UInt64, variant: DocumentCore.Variant) {
        self.node = node
        replica = ReplicaID(UInt64(1_000 + node))
        self.epoch = epoch
        disk = SimulatedDisk(document: document, epoch: epoch)
        var doc = ListDocument(replica: replica)
        doc.pendingLimits = Self.limits
        core = DocumentCore(id: document, name: "simulated", epoch: epoch, document: doc, maxFrame: 1 << 16, stepBytes: 1 << 14)
        core.variant = variant
    }

    /// A crash and a restart: every session is gone, the disk keeps what it keeps, recovery replays it.
    mutating func crashAndRecover(keep: Int, variant: DocumentCore.Variant) {
        disk.crash(keep: keep)
        let doc = disk.recover(replica: replica, limits: Self.limits)
        core = DocumentCore(id: core.id, name: core.name, epoch: epoch, document: doc, maxFrame: 1 << 16, stepBytes: 1 << 14,
                            stability: savedStability)
        core.variant = variant
        servers = [:]
        links = [:]
        awaitingAck = [:]
    }
}
