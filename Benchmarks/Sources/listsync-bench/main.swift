import Foundation
#if canImport(Glibc)
import Glibc
#endif

// listsync-bench: the ListSync side of the comparison benchmark (issue 5, Benchmarks/WORKLOADS.md).
// Benchmarks/compare.sh runs it as `listsync-bench --workload NAME --json --trace PATH`.

Memory.baseRSS = Memory.rssNow()

let usage = """
    usage: listsync-bench [--workload NAME]... [--json] [--trace PATH] [--reps N]
           listsync-bench --write-concurrent-trace AGENTS.OPS PATH.jsonl
           listsync-bench --list | --help

    Runs the ListSync workloads of Benchmarks/WORKLOADS.md (the same operation sequences as
    Benchmarks/compare/peers.py runs on Loro and Yrs) in a release build.

      --workload NAME  run this workload (repeatable); default: all of them
      --json           print one JSON object per workload (the compare.sh format) instead of a table;
                       the workloads then run in this process, one after the other (memory figures
                       are only clean with one workload per process, as compare.sh runs them)
      --trace PATH     the automerge-paper trace, NAME.jsonl with NAME.final.txt next to it
                       (default: Benchmarks/Traces/automerge-paper.jsonl)
      --reps N         cap every repetition at N runs (default 10; 1 = single runs). Timed parts
                       are the best of up to 10 runs (W1), 5 (W2's exports and loads, W4.moves
                       load_ms) or 3 (W4.moves and W4.merge moves), no new run after 10 s
      --concurrent-trace PATH
                       the concurrent trace W8.concurrent replays (NAME.jsonl, with NAME.final.txt
                       checked when it is next to it; one replica per agent), instead of clownschool
      --deliver causal|authors|transactions
                       how a W8 workload delivers: in causal order, author by author in a shuffled
                       order (W8.late's), or transaction by transaction shuffled (W8.scattered's);
                       default: by workload name
      --kanban-script PATH
                       W14.kanban's operation script (default: Benchmarks/results/W14.kanban.json;
                       write it with python3 Benchmarks/compare/kanban_script.py PATH)
      --write-concurrent-trace [W8.synthetic.|W8.branches.|W8.late.]AGENTS.OPS PATH.jsonl
                       write the generated trace of W8.synthetic.AGENTS.OPS (AGENTS agents, about OPS
                       element operations, most text deleted again; the default), of
                       W8.branches.AGENTS.OPS (the same with long-lived branches) or of
                       W8.late.AGENTS.OPS (large transactions on branches merged late; W8 replays
                       it author by author) to PATH.jsonl and exit, for compare/peers.py
                       --concurrent-trace PATH.jsonl
      --list           print the workload names
      --help           this text

    The table mode runs every workload in its own child process (`--json`), like compare.sh.
    Build: swift build -c release --product listsync-bench
    Workloads: \(allWorkloads.joined(separator: ", "))
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("listsync-bench: \(message)\n(see --help)\n".utf8))
    exit(2)
}

func defaultTrace() -> String {
    let candidates = [
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Traces/automerge-paper.jsonl").path,
        FileManager.default.currentDirectoryPath + "/Benchmarks/Traces/automerge-paper.jsonl",
    ]
    return candidates.first { FileManager.default.fileExists(atPath: $0) } ?? candidates[0]
}

var workloads: [String] = []
var json = false
var tracePath: String?
var concurrentTracePath: String?
var kanbanScriptPath: String?
var deliver: DeliverOption?
var args = Array(CommandLine.arguments.dropFirst())[...]
while let a = args.popFirst() {
    func value() -> String {
        guard let v = args.popFirst(), !v.hasPrefix("--") else { fail("\(a) needs a value") }
        return v
    }
    switch a {
    case "--workload", "-w":
        let w = value()
        guard allWorkloads.contains(w) || isGeneratedTraceWorkload(w) || isOpenOnlyWorkload(w) else {
            fail("unknown workload '\(w)'; known: \(allWorkloads.joined(separator: ", "))")
        }
        workloads.append(w)
    case "--json": json = true
    case "--trace": tracePath = value()
    case "--concurrent-trace": concurrentTracePath = value()
    case "--kanban-script": kanbanScriptPath = value()
    case "--deliver":
        let d = value()
        guard let option = DeliverOption(rawValue: d) else {
            fail("--deliver takes \(DeliverOption.allCases.map(\.rawValue).joined(separator: ", ")), not '\(d)'")
        }
        deliver = option
    case "--write-concurrent-trace":
        let size = value(), path = value()
        do { try writeSyntheticTrace(size, to: path) } catch { fail("\(error)") }
        exit(0)
    case "--reps":
        guard let n = Int(value()), n >= 1 else { fail("--reps needs a positive integer") }
        Repeat.reps = n
    case "--list":
        print(allWorkloads.joined(separator: "\n"))
        exit(0)
    case "--help", "-h":
        print(usage)
        exit(0)
    default:
        fail("unknown argument '\(a)'")
    }
}
if workloads.isEmpty { workloads = allWorkloads }

let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
let ctx = Context(
    tracePath: URL(fileURLWithPath: tracePath ?? defaultTrace()).standardizedFileURL.path,
    executable: FileManager.default.fileExists(atPath: executable) ? executable : CommandLine.arguments[0],
    concurrentTracePath: concurrentTracePath.map { URL(fileURLWithPath: $0).standardizedFileURL.path },
    kanbanScriptPath: kanbanScriptPath.map { URL(fileURLWithPath: $0).standardizedFileURL.path },
    deliver: deliver)
if workloads.contains(where: { $0.hasPrefix("W1.trace") || $0.hasPrefix("W2") || $0.hasPrefix("W3") || $0 == "W6.memory" || $0 == "W10.store" }),
   !FileManager.default.fileExists(atPath: ctx.tracePath) {
    fail("trace not found: \(ctx.tracePath) (pass --trace PATH)")
}

if json {
    var failed = false
    for w in workloads {
        var result: BenchResult
        do {
            result = try run(w, ctx)
        } catch {
            // Reported as a result row (like peers.py), so one broken workload does not hide the rest.
            result = BenchResult(workload: w, ok: false, note: "error: \(error)")
            failed = true
        }
        if w != "W6.memory", result.metric("peak_rss_bytes") == nil {
            result.set("peak_rss_bytes", Memory.rssPeak() - Memory.baseRSS)
        }
        print(result.json)
        fflush(nil)
    }
    exit(failed ? 1 : 0)
}

// Table mode: one child process per workload.
func fmt(_ v: Any?) -> String {
    guard let n = v as? NSNumber else { return "–" }
    let d = n.doubleValue
    if abs(d) >= 100 { return NumberFormatter.localizedString(from: NSNumber(value: d.rounded()), number: .decimal) }
    return String(format: abs(d) >= 1 ? "%.3g" : "%.3f", d)
}

let shown: [String: [String]] = [
    "W1.trace": ["ns_per_op", "doc_peak_rss_bytes", "peak_rss_bytes"],
    "W2.history": ["history_bytes", "snapshot_bytes", "load_history_ms", "load_snapshot_ms",
                   "history_snapshot_bytes", "load_history_snapshot_ms"],
    "W3.stream.1": ["ms", "bytes", "deltas"],
    "W3.stream.100": ["ms", "bytes", "deltas"],
    "W4.moves": ["ms", "ns_per_op", "history_bytes", "load_ms", "doc_peak_rss_bytes"],
    "W4.merge": ["ms", "items_after_merge", "exchange_bytes"],
    "W5.sections": ["ms", "ns_per_op"],
    "W6.memory": ["bytes_per_live_item", "bytes_per_deleted_item"],
    "W7.reverse.10000": ["ms", "ns_per_op", "buffered_ops"],
    "W7.reverse.100000": ["ms", "ns_per_op", "buffered_ops"],
    "W7.shuffled.10000": ["ms", "ns_per_op", "buffered_ops"],
    "W7.shuffled.100000": ["ms", "ns_per_op", "buffered_ops"],
    "W8.concurrent": ["ms", "ns_per_op", "wire_ms", "memory_bytes", "documents_memory_bytes"],
    "W14.kanban": ["ms", "make_ms", "merge_ms", "history_bytes", "snapshot_bytes", "load_snapshot_ms",
                   "memory_bytes", "every_card_once"],
    "W12.churn.100000": ["ns_per_op", "snapshot_bytes", "history_bytes", "memory_bytes"],
    "W12.churn.1000000": ["ns_per_op", "snapshot_bytes", "history_bytes", "memory_bytes"],
    "W9.tcp": ["bulk_ms", "bulk_mb_s", "stream_ops_per_s", "latency_p50_us", "latency_p99_us"],
    "W11.crypto": ["sha256_mb_s", "aead_seal_mb_s", "aead_open_mb_s", "aead_seal_1k_mb_s"],
    "W10.store": ["appends_per_s_1", "appends_per_s_1_growing", "appends_per_s_16", "appends_per_s_16_docs_own",
                  "appends_per_s_16_docs_shared", "bytes_per_op", "recover_log_ms", "recover_snapshot_ms"],
]
print("ListSync benchmark (release build), trace \(ctx.tracePath)")
print(String(repeating: "-", count: 78))
var anyFailed = false
for w in workloads {
    FileHandle.standardError.write(Data("running \(w)...\n".utf8))
    var childArgs = [ctx.executable, "--workload", w, "--json", "--trace", ctx.tracePath]
    if Repeat.reps != 10 { childArgs += ["--reps", String(Repeat.reps)] }
    if let path = ctx.concurrentTracePath { childArgs += ["--concurrent-trace", path] }
    if let path = ctx.kanbanScriptPath { childArgs += ["--kanban-script", path] }
    if let d = ctx.deliver { childArgs += ["--deliver", d.rawValue] }
    do {
        let r = try runChild(childArgs)
        let metrics = r["metrics"] as? [String: Any] ?? [:]
        let ok = r["ok"] as? Bool ?? false
        if !ok { anyFailed = true }
        let names = shown[w] ?? ["ns_per_op", "build_ms"]
        let cells = names.map { "\($0) \(fmt(metrics[$0]))" }.joined(separator: "  ")
        print("\(w.padding(toLength: 18, withPad: " ", startingAt: 0)) \(ok ? "ok  " : "FAIL")  \(cells)")
        if !ok { print("    \(r["note"] as? String ?? "")") }
    } catch {
        anyFailed = true
        print("\(w.padding(toLength: 18, withPad: " ", startingAt: 0)) FAIL  \(error)")
    }
}
exit(anyFailed ? 1 : 0)
