import Foundation
import ListSync
import ListCRDT
import ListSyncCrypto
import ListSyncNATS

/// The documents' snapshots and trim leases in the cluster (Docs/Cluster.md, "Snapshots and
/// trimming"): one JetStream key-value bucket (default `listsync_snapshots`) with, per document,
///
/// - `<id>.lease`: the trim lease (``ClusterLease``), JSON `{"holder": node}`;
/// - `<id>.g<generation>.<i>`: the snapshot's chunks, each an encoded batch of operations
///   (``ListOperation/encode(_:)``, at most ``ClusterMachine/Configuration/maxPayload`` bytes);
/// - `<id>.head`: the current snapshot (``Head``), written with a compare-and-set on its revision
///   once every chunk is stored, so that a head names only chunks that JetStream holds.
///
/// Why key-value chunks and not JetStream's object store: the object store is a stream too
/// (chunks on one subject, a metadata message rolled up per object), read with a consumer; the
/// project's NATS client has a key-value bucket already, and a snapshot needs one thing more
/// than chunks: a compare-and-set on its head, which the bucket gives per key.
///
/// A snapshot is the document's operations, not its state snapshot: a node that loads it may
/// hold operations of its own that the snapshot lacks, and operations merge into any copy
/// through the normal receive path (idempotent, causally buffered), where a state snapshot
/// would replace the copy.
struct ClusterSnapshots: Sendable {
    /// What `<id>.head` names: the snapshot in force.
    struct Head: Codable, Equatable, Sendable {
        /// Counts the document's snapshots; the chunks are `<id>.g<generation>.<i>`.
        var generation: UInt64
        /// The stream sequence it covers: every operation of the document's subject at this
        /// sequence or below is in it. The subject is trimmed below `sequence + 1` after it.
        var sequence: UInt64
        /// How many chunks.
        var chunks: Int
        /// SHA-256 (hex) of the chunks, concatenated in order.
        var sha256: String
        /// The version vector of the operations in it (``ClusterCheckpoint/encode(_:)``).
        var version: [String: UInt64]
    }

    /// Why a snapshot could not be read (nothing of it is applied) or written.
    enum Failure: Error, Sendable, CustomStringConvertible {
        /// The head's tag is missing or not the cluster key's.
        case badTag
        /// The head or a chunk does not decode.
        case malformed(String)
        /// A chunk is missing (a newer snapshot replaced it while it was read: read the head again).
        case missingChunk(Int)
        /// The chunks' SHA-256 is not the head's.
        case digestMismatch
        /// Another node wrote the head first (compare-and-set lost).
        case headMoved
        /// JetStream failed.
        case jetStream(JetStreamError)

        var description: String {
            switch self {
            case .badTag: return "the snapshot head's tag is not the cluster key's"
            case let .malformed(why): return "malformed snapshot: \(why)"
            case let .missingChunk(i): return "snapshot chunk \(i) is missing"
            case .digestMismatch: return "the snapshot's chunks are not the ones its head names"
            case .headMoved: return "another node wrote the snapshot head first"
            case let .jetStream(e): return "\(e)"
            }
        }
    }

    let bucket: KeyValue
    /// The cluster key (``ClusterEnvelope/clusterKey(daemonKey:)``): heads are tagged with it.
    let key: [UInt8]

    // MARK: Heads

    /// The head of `document` and its revision; nil if it has no snapshot.
    ///
    /// - Throws: ``Failure``: a head whose tag is wrong is refused.
    func head(_ document: DocumentID) async throws(Failure) -> (head: Head, revision: UInt64)? {
        let entry: KeyValue.Entry?
        do { entry = try await bucket.get("\(document).head") } catch { throw .jetStream(error) }
        guard let entry else { return nil }
        return (try Self.openHead(entry.value, document: document, key: key), entry.revision)
    }

    /// A head's value: the tag (64 hex digits), a newline, the head's JSON.
    static func sealHead(_ head: Head, document: DocumentID, key: [UInt8]) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let body = try? encoder.encode(head) else { preconditionFailure("a head always encodes") }
        let tag = ClusterEnvelope.tagHex(subject: "snapshot.\(document)", payload: Array(body), key: key)
        return Array(tag.utf8) + [10] + Array(body)
    }

    /// The head in a value made by ``sealHead(_:document:key:)``, once its tag is checked.
    ///
    /// - Throws: ``Failure/badTag``, ``Failure/malformed(_:)``.
    static func openHead(_ value: [UInt8], document: DocumentID, key: [UInt8]) throws(Failure) -> Head {
        guard let newline = value.firstIndex(of: 10) else { throw .badTag }
        let tag = String(decoding: value[..<newline], as: UTF8.self)
        let body = Array(value[(newline + 1)...])
        guard tag == ClusterEnvelope.tagHex(subject: "snapshot.\(document)", payload: body, key: key) else { throw .badTag }
        do { return try JSONDecoder().decode(Head.self, from: Data(body)) } catch { throw .malformed("head: \(error)") }
    }

    // MARK: Writing and reading

    /// Stores a snapshot of `document`: its chunks, then its head (a compare-and-set on `after`'s
    /// revision, 0 if it has none). Returns once JetStream acknowledged the head: only then may
    /// the subject be trimmed. The previous generation's chunks are removed after (best effort).
    ///
    /// - Throws: ``Failure/headMoved`` when another node wrote the head first; ``Failure/jetStream(_:)``.
    func write(_ document: DocumentID, pieces: [[ListOperation]], sequence: UInt64, version: VersionVector,
               after previous: (head: Head, revision: UInt64)?,
               oldChunksLeft: (@Sendable (JetStreamError) -> Void)? = nil) async throws(Failure) -> Head {
        precondition(previous.map { sequence > $0.head.sequence } ?? true, "a snapshot only moves forward")
        let generation = (previous?.head.generation ?? 0) + 1
        var hasher = SHA256.Hasher()
        for (i, piece) in pieces.enumerated() {
            let bytes = ListOperation.encode(piece)
            hasher.update(bytes)
            do { try await bucket.put("\(document).g\(generation).\(i)", bytes) } catch { throw .jetStream(error) }
        }
        let digest = hasher.finalize()
        let head = Head(generation: generation, sequence: sequence, chunks: pieces.count, sha256: Hex.encode(digest),
                        version: ClusterCheckpoint.encode(version))
        do { try await bucket.update("\(document).head", Self.sealHead(head, document: document, key: key), revision: previous?.revision ?? 0) } catch {
            if case let .api(_, code, _) = error, code == JetStreamError.wrongLastSequence { throw .headMoved }
            throw .jetStream(error)
        }
        if let old = previous?.head.generation {
            // The previous generation's chunks: only space once the new head is in force, so a
            // failure is reported (the caller logs it) and the snapshot stands.
            do { _ = try await bucket.js.purge(bucket.streamName, subject: bucket.subject("\(document).g\(old).>")) } catch {
                oldChunksLeft?(error)
            }
        }
        return head
    }

    /// The operations of the snapshot `head` names, in the order they were written, once the
    /// chunks' digest is checked.
    ///
    /// - Throws: ``Failure``; nothing is returned from a snapshot whose chunks do not match.
    func read(_ document: DocumentID, _ head: Head) async throws(Failure) -> [[ListOperation]] {
        var chunks: [[UInt8]] = []
        var hasher = SHA256.Hasher()
        for i in 0..<head.chunks {
            let entry: KeyValue.Entry?
            do { entry = try await bucket.get("\(document).g\(head.generation).\(i)") } catch { throw .jetStream(error) }
            guard let entry else { throw .missingChunk(i) }
            hasher.update(entry.value)
            chunks.append(entry.value)
        }
        guard Hex.encode(hasher.finalize()) == head.sha256 else { throw .digestMismatch }
        var out: [[ListOperation]] = []
        for c in chunks {
            do { out.append(try ListOperation.decode(c)) } catch { throw .malformed("chunk: \(error)") }
        }
        return out
    }

    /// Removes every snapshot chunk, head and lease of `document` (destroyed).
    ///
    /// - Throws: ``JetStreamError`` when the purge fails.
    func remove(_ document: DocumentID) async throws(JetStreamError) {
        _ = try await bucket.js.purge(bucket.streamName, subject: bucket.subject("\(document).>"))
    }

    // MARK: Leases

    /// The lease entry of `document`; nil if it has none.
    func lease(_ document: DocumentID) async throws(JetStreamError) -> ClusterLease.Entry? {
        guard let e = try await bucket.get("\(document).lease") else { return nil }
        // An entry that does not decode names no holder: it is taken at once, as a released one.
        let holder = (try? JSONDecoder().decode([String: String].self, from: Data(e.value)))?["holder"] ?? ""
        return ClusterLease.Entry(holder: holder, revision: e.revision)
    }

    /// Writes `holder` ("" to release) into the lease of `document` if its revision is still
    /// `revision`; returns the new revision.
    ///
    /// - Throws: ``JetStreamError`` (``JetStreamError/wrongLastSequence`` inside when another write came first).
    func setLease(_ document: DocumentID, holder: String, revision: UInt64) async throws(JetStreamError) -> UInt64 {
        let value = Array(#"{"holder":"\#(holder)"}"#.utf8)
        return try await bucket.update("\(document).lease", value, revision: revision)
    }
}
