import Foundation
import Testing
import ListCRDT
@testable import ListSyncServer

/// A node's read checkpoints and the cluster's snapshot heads (no NATS).
struct ClusterCheckpointTests {
    @Test func checkpointsRoundTripAndRefuseGarbage() throws {
        let folder = NSTemporaryDirectory() + "cp-\(UInt64.random(in: 1...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = ClusterCheckpoints(dataFolder: folder, fileSystem: .system)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let id = DocumentID(high: 7, low: 9)
        #expect(store.read(id) == nil)
        let v = VersionVector([ReplicaID(0xabc): 17, ReplicaID(UInt64.max): 3])
        try store.write(id, ClusterCheckpoint(sequence: 42, version: v))
        #expect(store.read(id)?.sequence == 42 && store.read(id)?.versionVector == v)
        _ = FileManager.default.createFile(atPath: folder + "/cluster/" + id.description, contents: Data(#"{"sequence":1,"version":{"zz":1}}"#.utf8))
        #expect(store.read(id) == nil)
    }

    @Test func aSnapshotHeadIsRefusedUnlessTaggedWithTheClusterKey() throws {
        let key = ClusterEnvelope.clusterKey(daemonKey: Array(repeating: 3, count: 32))
        let id = DocumentID(high: 1, low: 2)
        let head = ClusterSnapshots.Head(generation: 2, sequence: 99, chunks: 1, sha256: "00", version: ["a": 4])
        let sealed = ClusterSnapshots.sealHead(head, document: id, key: key)
        #expect(try ClusterSnapshots.openHead(sealed, document: id, key: key) == head)
        #expect(throws: ClusterSnapshots.Failure.self) { try ClusterSnapshots.openHead(sealed, document: DocumentID(high: 1, low: 3), key: key) }
        var flipped = sealed
        flipped[flipped.count - 3] ^= 1
        #expect(throws: ClusterSnapshots.Failure.self) { try ClusterSnapshots.openHead(flipped, document: id, key: key) }
        let other = ClusterEnvelope.clusterKey(daemonKey: Array(repeating: 4, count: 32))
        #expect(throws: ClusterSnapshots.Failure.self) { try ClusterSnapshots.openHead(sealed, document: id, key: other) }
    }
}
