import Foundation
import ListCRDT
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The daemon's counters and gauges, for `status` and `/metrics`. Safe from any thread.
///
/// Each is updated where its event happens (a connection, a batch, a document created, loaded or
/// unloaded), so reading them all is O(number of values): `/metrics` walks no document and no file
/// (Docs/Security.md, "Admin port"). The one value that needs a walk, the bytes on disk, is
/// sampled in the background (``Daemon/sampleDiskUsage()``).
final class DaemonMetrics: Sendable {
    struct Counters {
        var connectionsTotal = 0, connectionsOpen = 0
        /// Documents in the data folder (counted at start, then at each create) and in memory.
        var documentsOnDisk = 0, documentsResident = 0
        /// Bytes in the data folder at the last sample; `nil` before the first.
        var diskBytes: Int?
        /// Admin requests refused for a missing or wrong token.
        var adminUnauthorized = 0
        /// Discovery announcements by what became of them (``DiscoveryState/Verdict``, `invalid`, `limit`).
        var discovery: [String: Int] = [:]
        var documentsLoaded = 0, documentsUnloaded = 0
        var operationsIn = 0, operationsOut = 0
        var batchesAcknowledged = 0, batchesRefused = 0, equivocations = 0, rateLimited = 0
        /// Presence messages taken and relayed, and dropped for the presence limit.
        var presenceIn = 0, presenceDropped = 0
        var bytesIn = 0, bytesOut = 0
        var storageFailures = 0
        /// Compactions (Docs/Daemon.md, "Compaction"): how many, the operations and slots they
        /// collected, senders retired, and when the last one ran (wall-clock seconds, 0: never).
        var compactions = 0, operationsCollected = 0, slotsCollected = 0, sendersRetired = 0
        var lastCompaction: UInt64 = 0
        /// Per resident document (by id): the bytes a compaction would free now and the
        /// document's bytes as they are counted (``ListCRDT/ListDocument/reclaimableBytes``),
        /// as its host last published them.
        var documentBytes: [String: (reclaimable: Int, document: Int)] = [:]
        /// Device connections ended or refused: credential revoked, unknown or expired.
        var devicesRefused = 0
        var lastStorageError: String?
        /// Durable-append latency (write + fdatasync, group commit included), in seconds.
        var appendBuckets = [Int](repeating: 0, count: DaemonMetrics.bucketBounds.count + 1)
        var appendSum = 0.0, appendCount = 0
    }

    /// Upper bounds of the append-latency histogram, in seconds.
    static let bucketBounds: [Double] = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1]

    let state = Mutex(Counters())

    func setOnDisk(_ n: Int) { state.withLock { $0.documentsOnDisk = n } }
    func setResident(_ n: Int) { state.withLock { $0.documentsResident = n } }
    func setDiskBytes(_ n: Int) { state.withLock { $0.diskBytes = n } }
    func adminRefused() { state.withLock { $0.adminUnauthorized += 1 } }
    func discovery(_ result: String) { state.withLock { $0.discovery[result, default: 0] += 1 } }
    var documentsOnDisk: Int { state.withLock { $0.documentsOnDisk } }
    var diskBytes: Int? { state.withLock { $0.diskBytes } }

    func connected() { state.withLock { $0.connectionsTotal += 1; $0.connectionsOpen += 1 } }
    func disconnected() { state.withLock { $0.connectionsOpen -= 1 } }
    func loaded() { state.withLock { $0.documentsLoaded += 1 } }
    func unloaded() { state.withLock { $0.documentsUnloaded += 1 } }
    func received(operations: Int, bytes: Int) { state.withLock { $0.operationsIn += operations; $0.bytesIn += bytes } }
    func sent(operations: Int, bytes: Int) { state.withLock { $0.operationsOut += operations; $0.bytesOut += bytes } }
    func acknowledged() { state.withLock { $0.batchesAcknowledged += 1 } }
    func refused() { state.withLock { $0.batchesRefused += 1 } }
    func equivocated(_ n: Int) { state.withLock { $0.equivocations += n } }
    /// Counts a batch refused by a rate limit; returns the total so far.
    @discardableResult
    func rateLimited() -> Int { state.withLock { $0.rateLimited += 1; return $0.rateLimited } }
    func presence() { state.withLock { $0.presenceIn += 1 } }
    /// Counts a presence message dropped by the presence limit; returns the total so far.
    @discardableResult
    func presenceDropped() -> Int { state.withLock { $0.presenceDropped += 1; return $0.presenceDropped } }
    func deviceRefused() { state.withLock { $0.devicesRefused += 1 } }
    func compacted(_ report: CompactionReport, at time: UInt64) {
        state.withLock {
            $0.compactions += 1
            $0.operationsCollected += report.operationsDropped
            $0.slotsCollected += report.slotsBefore - report.slotsAfter
            $0.lastCompaction = time
        }
    }
    /// Document `id`'s reclaimable and total bytes now; nil when it is no longer resident.
    func documentBytes(_ id: String, _ bytes: (reclaimable: Int, document: Int)?) {
        state.withLock { $0.documentBytes[id] = bytes }
    }
    func retired(_ n: Int) { state.withLock { $0.sendersRetired += n } }
    func storageFailed(_ why: String) { state.withLock { $0.storageFailures += 1; $0.lastStorageError = why } }

    func appended(seconds: Double) {
        state.withLock { c in
            let i = Self.bucketBounds.firstIndex { seconds <= $0 } ?? Self.bucketBounds.count
            c.appendBuckets[i] += 1
            c.appendSum += seconds
            c.appendCount += 1
        }
    }

    /// This process's resident set size, in bytes (Linux: /proc/self/statm).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
