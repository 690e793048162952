import Foundation

/// An error escaped the replay of one corpus file: which corpus, which file, and the error.
public struct FuzzReplayFailure: Error, CustomStringConvertible {
    /// The harness's name (`ops`, `tcp`, ...).
    public let corpus: String
    /// The input's path, relative to Tests/Fuzz (`Corpus/tcp/3f2a...`), to reproduce it with
    /// `.build-fuzz/bin/fuzz-<corpus> Tests/Fuzz/<file>`.
    public let file: String
    /// What the replay threw.
    public let error: any Error

    public var description: String { "fuzz corpus \(corpus), input Tests/Fuzz/\(file): \(error)" }
}

/// Replays every file of Tests/Fuzz/Corpus/<name>/ and Tests/Fuzz/Crashes/<name>/ (Docs/Fuzzing.md),
/// in name order, through `body`, each as a fresh `FuzzInput` (the reader the harnesses use), and
/// returns how many inputs there were (a suite expects more than none). An error `body` throws
/// stops the replay as a `FuzzReplayFailure` naming the input's file. `file` is the caller's (a
/// file of a test target, one folder below Tests/).
///
/// - Complexity: O(total bytes of the corpus) plus the work of `body`.
public func replayFuzzCorpus(_ name: String, file: String = #filePath,
                             _ body: (_ input: inout FuzzInput) throws -> Void) throws -> Int {
    let tests = URL(fileURLWithPath: file).deletingLastPathComponent().deletingLastPathComponent()
    var count = 0
    for folder in ["Corpus/\(name)", "Crashes/\(name)"] {
        let dir = tests.appendingPathComponent("Fuzz").appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        for n in names.sorted() where !n.hasPrefix(".") {
            guard let data = FileManager.default.contents(atPath: dir.appendingPathComponent(n).path) else { continue }
            var input = FuzzInput(Array(data))
            count += 1
            do { try body(&input) } catch {
                throw FuzzReplayFailure(corpus: name, file: "\(folder)/\(n)", error: error)
            }
        }
    }
    return count
}
