import Foundation
import ListSyncTestSupport
import Testing
import ListSyncServer
@testable import listsync

/// Replays the `cli` libFuzzer corpus and kept crashes of Tests/Fuzz (Docs/Fuzzing.md) through
/// the same calls as its harness. (The `daemon` corpus is replayed by ListSyncTests: its harness
/// drives ServerSession, which is in ListSync.)
@Suite("Fuzz corpus replay: command arguments")
struct FuzzCorpusReplayTests {
    @Test("Options, PathArgument and parseAddress")
    func commandArguments() throws {
        let client: (Set<String>, Set<String>) = (["--daemon", "--key-file", "--data", "--name", "--value"], ["--help", "--json", "--follow"])
        let serve: (Set<String>, Set<String>) = (["--data", "--listen", "--key-file", "--peer", "--max-connections", "--idle-unload", "--log-format"], ["--help"])
        let count = try replayFuzzCorpus("cli") { input in
            let args = input.rest().split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            for (values, flags) in [client, serve] {
                guard let o = try? Options(args, values: values, flags: flags) else { continue }
                for text in o.positional + o.values.values.flatMap({ $0 }) {
                    if let path = try? PathArgument(text) { #expect((try? PathArgument(path.text)) == path) }
                    _ = try? parseAddress(text, what: "--daemon")
                }
            }
            for a in args {
                _ = try? PathArgument(a)
                _ = try? parseAddress(a, defaultHost: "", what: "--peer")
            }
        }
        #expect(count > 0)
    }
}
