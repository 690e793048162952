#if canImport(Glibc)
import Foundation
import ListCRDT
import ListSync
import ListSyncTestSupport
import Testing
@testable import ListSyncServer
import ListSyncTestTraits

/// Creates of one id arrive together when devices and peers bring the same new document at once.
@Suite("Concurrent creates of one document", .serialized, .hangGuard)
struct DaemonCreateRaceTests {
    /// The descriptors of this process open on files under `folder`.
    static func descriptors(under folder: String) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.count { fd in
            ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd)) ?? "").hasPrefix(folder)
        }
    }

    @Test("32 creates of one id at once, and loads racing them: one store, one epoch, no descriptor leaked", arguments: [0, 0x5eed] as [UInt64])
    func oneStore(epoch: UInt64) async throws {
        let dir = TemporaryFolder()
        defer { dir.remove() }
        var config = DaemonConfiguration(dataFolder: dir.path + "/data")
        config.listenPort = 0
        // A log per document: a second store would hold a second descriptor on it (the race is
        // the daemon's, whatever the storage; with the shared log a store holds no descriptor).
        config.sharedLog = nil
        let daemon = Daemon(configuration: config)
        try await daemon.start()
        var rng = SystemRandomNumberGenerator()
        let id = DocumentID.random(using: &rng)
        let documents = dir.path + "/data/documents"

        let results = await withTaskGroup(of: (DocumentID, UInt64)?.self) { group in
            for i in 0..<32 {
                group.addTask {
                    if i % 4 == 3 { _ = try? await daemon.host(id); return nil }   // a subscribe's load, racing
                    return try? await daemon.create(name: "same", sections: [], id: id, epoch: epoch)
                }
            }
            var out: [(DocumentID, UInt64)] = []
            for await r in group { if let r { out.append(r) } }
            return out
        }
        #expect(results.count == 24, "every create answered")
        #expect(Set(results.map(\.0)) == [id])
        #expect(Set(results.map(\.1)).count == 1, "one epoch: \(Set(results.map(\.1)))")
        if epoch != 0 { #expect(results.first?.1 == epoch) }
        let listed = await daemon.list()
        #expect(listed.map(\.id) == [id])
        // One store: its log open once (a second store would hold a second descriptor on it).
        let open = Self.descriptors(under: documents)
        #expect(open >= 1 && open <= 2, "\(open) descriptors open under the document's folder")
        await daemon.stop()
        #expect(Self.descriptors(under: documents) == 0, "a store left open after the stop")
    }
}
#endif
