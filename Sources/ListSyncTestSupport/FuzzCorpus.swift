import Foundation

/// Every file of Tests/Fuzz/Corpus/<name>/ and Tests/Fuzz/Crashes/<name>/ (Docs/Fuzzing.md), for the
/// test targets that replay a harness's corpus. `file` is the caller's (a file of a test target,
/// one folder below Tests/).
public func fuzzInputs(_ name: String, file: String = #filePath) -> [[UInt8]] {
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

/// The harnesses' split (Tests/Fuzz/Harnesses/Support/FuzzInput.swift): a size byte s gives a
/// piece of s + 1 bytes, the sizes cycled; no sizes: one piece.
public func split(_ bytes: [UInt8], _ sizes: [UInt8]) -> [ArraySlice<UInt8>] {
    guard !sizes.isEmpty else { return [bytes[...]] }
    var pieces: [ArraySlice<UInt8>] = []
    var at = 0, k = 0
    while at < bytes.count {
        let n = min(Int(sizes[k % sizes.count]) + 1, bytes.count - at)
        pieces.append(bytes[at..<at + n])
        at += n
        k += 1
    }
    return pieces
}
