import Foundation
import Testing
import ListCRDT
import ListSync

/// Replays the `sync` libFuzzer corpus and kept crashes of Tests/Fuzz (Docs/Fuzzing.md).
@Suite("Fuzz corpus replay: sync messages")
struct FuzzCorpusReplayTests {
    @Test("SyncMessage(decoding:) and back")
    func syncMessages() throws {
        let inputs = fuzzInputs("sync")
        #expect(!inputs.isEmpty)
        for bytes in inputs {
            guard let m = try? SyncMessage(decoding: bytes) else { continue }
            #expect(try SyncMessage(decoding: m.encoded()) == m)
        }
    }
}

/// Every file of Tests/Fuzz/Corpus/<name>/ and Tests/Fuzz/Crashes/<name>/.
func fuzzInputs(_ name: String, file: String = #filePath) -> [[UInt8]] {
    let tests = URL(fileURLWithPath: file).deletingLastPathComponent().deletingLastPathComponent()
    var out: [[UInt8]] = []
    for folder in ["Fuzz/Corpus/\(name)", "Fuzz/Crashes/\(name)"] {
        let dir = tests.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        for n in names.sorted() where !n.hasPrefix(".") {
            if let d = FileManager.default.contents(atPath: dir.appendingPathComponent(n).path) { out.append(Array(d)) }
        }
    }
    return out
}
