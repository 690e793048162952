import Foundation
import Testing
@testable import ListCRDT
import ListSyncSimulation
import ListSyncTestTraits

/// Damaged state snapshots (format version 2): every truncation and thousands of seeded bit flips
/// either throw a ``WireError`` or load a document that passes ``ListDocument/checkInvariants()``
/// (a flip in a value's bytes, or one the format cannot tell from another valid document).
@Suite(.cpuHeavy) struct StateSnapshotFuzzTests {
    /// A small document that every kind of edit touched, and its state snapshot.
    static func sample(seed: UInt64 = 5) -> (ListDocument, [UInt8]) {
        let (_, doc) = OperationCodingTests.randomHistory(seed: seed, replicas: 3, edits: 40)
        return (doc, doc.encodedSnapshot())
    }

    @Test("every proper prefix of a state snapshot is a typed error")
    func truncation() throws {
        let (doc, bytes) = Self.sample()
        // Version 9 where the random edits wrote fields (Docs/WireFormat.md §5.9), else version 2.
        #expect(bytes[4] == (doc.operations.contains(where: \.carriesFields) ? ListDocument.stateRecordsSnapshotFormatVersion : 2))
        for n in 0 ..< bytes.count {
            do {
                _ = try ListDocument(snapshot: bytes[..<n], replica: ReplicaID(9))
                Issue.record("a prefix of \(n) of \(bytes.count) bytes loaded")
            } catch {
                switch error {
                case .truncated, .countTooLarge, .invalidValue: break
                default: Issue.record("prefix of \(n) bytes: unexpected \(error)")
                }
            }
        }
    }

    @Test("3,000 seeded bit flips: a typed error or a document that passes its invariants")
    func bitFlips() throws {
        var rng = SplitMix64(seed: 0xB17F11B)
        var loadedCount = 0
        for round in 0 ..< 3_000 {
            let (_, good) = Self.sample(seed: UInt64(round % 3) + 5)
            var bytes = good
            for _ in 0 ..< (1 + rng.below(2)) {
                let at = 5 + rng.below(bytes.count - 5)
                bytes[at] ^= UInt8(1) << UInt8(rng.below(8))
            }
            do {
                var doc = try ListDocument(snapshot: bytes, replica: ReplicaID(9))
                loadedCount += 1
                try doc.checkInvariants()
                // It keeps working: its history rebuilds, and a local edit applies.
                _ = doc.operations
                _ = doc.encodedState()
                if doc.sectionCount == 0 { _ = try doc.insertSection(at: 0, value: Data("n".utf8)) }
                _ = try doc.insertItem(at: IndexPath(item: 0, section: 0), value: Data("x".utf8))
                try doc.checkInvariants()
            } catch let error as WireError {
                _ = error.description
            }
        }
        print("state snapshot fuzz: \(loadedCount) of 3000 flipped snapshots still loaded")
    }

    @Test("adversarial counts are refused before anything is allocated")
    func hugeCounts() throws {
        let header = Array("LSNP".utf8) + [2]
        let huge: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]
        // 2^56 replicas, 2^56 slots, 2^56 slot runs.
        for body in [huge, [0] + huge, [0, 0x80, 0x80, 0x04] + huge, [1, 7, 1, 1] + huge] {
            #expect(throws: WireError.self) { try ListDocument(snapshot: header + body, replica: ReplicaID(1)) }
        }
        // Damaged in the middle of every field: no crash (the loop above at every byte).
        let (_, bytes) = Self.sample(seed: 9)
        for at in 5 ..< bytes.count {
            for value: UInt8 in [0x00, 0x7F, 0xFF] {
                var damaged = bytes
                damaged[at] = value
                if let doc = try? ListDocument(snapshot: damaged, replica: ReplicaID(2)) { try doc.checkInvariants() }
            }
        }
    }
}
