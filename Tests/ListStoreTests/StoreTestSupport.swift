import Foundation
import ListCRDT
import ListSyncSimulation
import Synchronization
@testable import ListStore

/// A fresh folder under the temporary directory, removed by ``removeFolder(_:)``.
func temporaryFolder(_ name: String) -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("liststore-\(name)-\(UUID().uuidString)").path
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    chmod(path, 0o700)   // a data folder others can write to (umask 002) is refused
    return path
}

func removeFolder(_ path: String) { try? FileManager.default.removeItem(atPath: path) }

let testDocument = DocumentID(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)

/// Seeded random edits on one replica's document, handed out as batches.
struct EditStream {
    var document: ListDocument
    var rng: SplitMix64
    var fresh = 0

    init(replica: UInt64 = 1, seed: UInt64) {
        document = ListDocument(replica: ReplicaID(replica))
        rng = SplitMix64(seed: seed)
    }

    /// `count` random edits applied to ``document``; their operations.
    mutating func batch(_ count: Int) -> [ListOperation] {
        var ops: [ListOperation] = []
        while ops.count < count {
            let edit = RandomEdit.random(for: document, using: &rng) { fresh += 1; return "v\(fresh)" }
            if let op = try? edit.apply(to: &document) { ops.append(op) }
        }
        return ops
    }
}

/// A file-system hook that records every call and can fail calls: the `failAt`-th mutating call
/// (counting from 0) fails with `failErrno` once, or every mutating call from the `crashAfter`-th on
/// fails with EIO (a crash: nothing after it reaches the disk).
final class FaultyDisk: Sendable {
    struct State {
        var calls: [FileSystem.Call] = []
        var mutating = 0
        var crashAfter: Int?
        var failAt: Int?
        var failErrno: Int32 = 0
        var crashed = false
    }

    let state = Mutex(State())

    init(crashAfter: Int? = nil, failAt: Int? = nil, errno: Int32 = 0) {
        state.withLock { $0.crashAfter = crashAfter; $0.failAt = failAt; $0.failErrno = errno }
    }

    var fileSystem: FileSystem {
        FileSystem { call in self.decide(call) }
    }

    var calls: [FileSystem.Call] { state.withLock { $0.calls } }
    var mutatingCount: Int { state.withLock { $0.mutating } }
    var crashed: Bool { state.withLock { $0.crashed } }
    func names(_ name: String) -> Int { state.withLock { $0.calls.filter { $0.name == name }.count } }

    private func decide(_ call: FileSystem.Call) -> Int32? {
        state.withLock { s in
            s.calls.append(call)
            guard call.isMutating else { return nil }
            defer { s.mutating += 1 }
            if let c = s.crashAfter, s.mutating >= c {
                s.crashed = true
                return EIO
            }
            if s.failAt == s.mutating { return s.failErrno }
            return nil
        }
    }
}
