import Foundation
import ListCRDT
import ListSyncTestSupport

// Minimal first version: W1.trace only. See Benchmarks/WORKLOADS.md.
let traces = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Traces")
let trace = try EditingTrace(named: "automerge-paper", in: traces)
if CommandLine.arguments.contains("--check") {
    var doc = ListDocument(replica: ReplicaID(1))
    try doc.insertSection(at: 0)
    var n = 0
    for edit in trace.edits {
        for _ in 0..<edit.deleteCount { try doc.deleteItem(at: IndexPath(item: edit.position, section: 0)) }
        for (k, c) in edit.text.enumerated() {
            try doc.insertItem(at: IndexPath(item: edit.position + k, section: 0), value: Data([c]))
        }
        n += 1
        do { try doc.checkInvariants() } catch { print("after edit \(n) \(edit): \(error)"); exit(1) }
    }
    exit(0)
}
var best = Double.infinity
for _ in 0..<5 {
    var doc = ListDocument(replica: ReplicaID(1))
    try doc.insertSection(at: 0)
    let start = DispatchTime.now().uptimeNanoseconds
    for edit in trace.edits {
        for _ in 0..<edit.deleteCount { try doc.deleteItem(at: IndexPath(item: edit.position, section: 0)) }
        for (k, c) in edit.text.enumerated() {
            try doc.insertItem(at: IndexPath(item: edit.position + k, section: 0), value: Data([c]))
        }
    }
    let ns = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(trace.edits.count)
    best = min(best, ns)
    let n = try doc.itemCount(inSection: 0); precondition(n == 104_852)
}
print("W1.trace: \(Int(best)) ns/op")
