import Foundation
import ListCRDT
import ListStore

/// Where a node stopped reading a document's subject, kept on its disk so that a restart resumes
/// there instead of reading the subject again from its start (Docs/Cluster.md, "What a node
/// reads after a restart"). The node writes it only once the document's durable version includes
/// every operation of the subject up to ``sequence``, so a crash never leaves a checkpoint past
/// what the store holds.
///
/// File: `<data>/cluster/<document id>`, JSON `{"sequence": n, "version": {"<replica hex>": counter}}`,
/// written atomically (temporary file, fsync, rename, fsync of the folder).
struct ClusterCheckpoint: Codable, Equatable, Sendable {
    /// The last stream sequence of the document's subject read and durable here.
    var sequence: UInt64
    /// The operations of the subject up to ``sequence`` (and of any snapshot loaded before),
    /// as a version vector in ``encode(_:)``'s form.
    var version: [String: UInt64]

    /// A checkpoint at `sequence` covering `version`.
    init(sequence: UInt64, version: VersionVector) {
        self.sequence = sequence
        self.version = Self.encode(version)
    }

    /// ``version`` as a version vector; nil if a replica is not hexadecimal.
    var versionVector: VersionVector? { Self.decode(version) }

    /// A version vector as JSON takes it: replica ids in hexadecimal, counters as they are.
    static func encode(_ v: VersionVector) -> [String: UInt64] {
        Dictionary(uniqueKeysWithValues: v.entries.map { (String($0.replica.rawValue, radix: 16), $0.counter) })
    }

    /// The inverse of ``encode(_:)``; nil for a key that is not a hexadecimal replica id.
    static func decode(_ map: [String: UInt64]) -> VersionVector? {
        var counters: [ReplicaID: UInt64] = [:]
        for (k, c) in map {
            guard let r = UInt64(k, radix: 16) else { return nil }
            counters[ReplicaID(r)] = c
        }
        return VersionVector(counters)
    }
}

/// The checkpoints of one node: a folder of small files, one per document read.
struct ClusterCheckpoints: Sendable {
    /// `<data>/cluster`.
    let folder: String
    let fileSystem: FileSystem

    /// The checkpoints under `dataFolder`.
    init(dataFolder: String, fileSystem: FileSystem) {
        folder = dataFolder + "/cluster"
        self.fileSystem = fileSystem
    }

    /// The checkpoint of `document`; nil if there is none or it does not decode (the node then
    /// reads the subject from its start, or from the cluster's snapshot: never wrong, only slower).
    func read(_ document: DocumentID) -> ClusterCheckpoint? {
        guard let bytes = try? fileSystem.readFile(path(document)),
              let c = try? JSONDecoder().decode(ClusterCheckpoint.self, from: Data(bytes)), c.versionVector != nil else { return nil }
        return c
    }

    /// Writes the checkpoint of `document` (atomically; the folder made if missing).
    ///
    /// - Throws: ``StoreError`` from the disk.
    func write(_ document: DocumentID, _ checkpoint: ClusterCheckpoint) throws(StoreError) {
        if !fileSystem.exists(folder) { try fileSystem.mkdir(folder) }
        guard let data = try? JSONEncoder().encode(checkpoint) else {
            preconditionFailure("a checkpoint always encodes")
        }
        try fileSystem.writeAtomically(Array(data), to: path(document), folder: folder)
    }

    /// Removes the checkpoint of `document` (destroyed); nothing there is fine.
    ///
    /// - Throws: ``StoreError`` from the disk.
    func remove(_ document: DocumentID) throws(StoreError) {
        if fileSystem.exists(path(document)) { try fileSystem.unlink(path(document)) }
    }

    private func path(_ document: DocumentID) -> String { folder + "/" + document.description }
}
