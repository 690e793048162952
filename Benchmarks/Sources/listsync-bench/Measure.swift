import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Measurement helpers: clock, resident memory, best-of repetition, result records.
// Conventions: Benchmarks/WORKLOADS.md ("Conventions").

/// Monotonic nanoseconds.
@inline(__always)
func nowNs() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

enum Memory {
    /// Current resident set size in bytes (`/proc/self/statm`, second field, in pages).
    static func rssNow() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The resident set size after asking the C allocator to give back the free memory it keeps
    /// (glibc `malloc_trim(0)`, looked up with `dlsym`: it returns the free pages inside its heap
    /// too), so that the RSS falls when memory is freed; elsewhere the plain RSS.
    static func trimmedRSS() -> Int {
        #if canImport(Glibc)
        typealias Trim = @convention(c) (Int) -> Int32
        if let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "malloc_trim") {
            _ = unsafeBitCast(symbol, to: Trim.self)(0)
        }
        #endif
        return rssNow()
    }

    /// Peak resident set size in bytes (`ru_maxrss` is in KiB on Linux).
    static func rssPeak() -> Int {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Int(usage.ru_maxrss) * 1024
    }

    /// Resets the kernel's peak-RSS counter (`ru_maxrss` / VmHWM) by writing 5 to
    /// `/proc/self/clear_refs` (Linux >= 4.0), so that input preparation is not counted.
    static func resetPeak() {
        guard let f = fopen("/proc/self/clear_refs", "w") else { return }
        fputs("5", f)
        fclose(f)
    }

    /// RSS right after start-up: `peak_rss_bytes` is relative to it.
    nonisolated(unsafe) static var baseRSS = 0
}

/// One metric value, printed as an integer when it is one.
enum Metric {
    case int(Int)
    case double(Double)

    var json: String {
        switch self {
        case let .int(v): return String(v)
        case let .double(v): return v.isFinite ? String(v) : "null"
        }
    }

    var double: Double {
        switch self {
        case let .int(v): return Double(v)
        case let .double(v): return v
        }
    }
}

/// The result of one workload (one JSON object, see WORKLOADS.md).
struct BenchResult {
    var workload: String
    var metrics: [(String, Metric)] = []
    var ops = 0
    var ok = false
    var note = ""

    mutating func set(_ name: String, _ v: Int) { put(name, .int(v)) }
    mutating func set(_ name: String, _ v: Double) { put(name, .double(v)) }
    mutating func put(_ name: String, _ v: Metric) {
        if let k = metrics.firstIndex(where: { $0.0 == name }) { metrics[k].1 = v } else { metrics.append((name, v)) }
    }
    func metric(_ name: String) -> Metric? { metrics.first { $0.0 == name }?.1 }

    var json: String {
        let m = metrics.map { "\(jsonString($0.0)): \($0.1.json)" }.joined(separator: ", ")
        return "{\"engine\": \"listsync\", \"workload\": \(jsonString(workload)), \"metrics\": {\(m)}, "
            + "\"ops\": \(ops), \"ok\": \(ok), \"note\": \(jsonString(note))}"
    }
}

func jsonString(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        case "\r": out += "\\r"
        default:
            if u.value < 0x20 { out += String(format: "\\u%04x", u.value) } else { out.unicodeScalars.append(u) }
        }
    }
    return out + "\""
}

/// The repetition rule (WORKLOADS.md, "Repetition"), the same as `best_of` in compare/peers.py:
/// repeat a timed measurement (each run on fresh documents), at most `reps` times, no new run once
/// 10 s have passed since the first run started; keep the fastest. Memory metrics come from the
/// first run. `--reps N` caps every repetition count at N (`--reps 1`: single runs).
struct Repeat {
    nonisolated(unsafe) static var reps = 10
    static let budgetNs: UInt64 = 10_000_000_000
    /// Repetition counts: W1 runs best of 10 (the first runs of a process pay for fresh memory:
    /// page faults; the first run is reported apart as `first_run_ns_per_op`), loads (W2, W4.moves
    /// `load_ms`) best of 5, W4's move loops best of 3.
    static let runs = 10, loads = 5, moveRuns = 3

    /// The one repetition loop. Calls `once` at most min(`reps`, --reps) times, stopping early once
    /// 10 s have passed or `stop` holds for a result; returns the result with the smallest `time`
    /// and the number of runs. `first` sees the first result right after it (memory readings).
    static func fastest<R>(
        reps: Int, time: (R) -> Double, stop: (R) -> Bool = { _ in false }, first: (R) -> Void = { _ in },
        _ once: () throws -> R
    ) rethrows -> (best: R, runs: Int) {
        let t0 = nowNs()
        var best: R?
        var runs = 0
        for _ in 0..<max(1, min(reps, Repeat.reps)) {
            let r = try once()
            runs += 1
            if getenv("LISTSYNC_BENCH_RUNS") != nil { FileHandle.standardError.write("run \(runs): \(time(r))\n".data(using: .utf8)!) }
            if runs == 1 { first(r) }
            if best == nil || time(r) < time(best!) { best = r }
            if stop(r) || nowNs() - t0 > budgetNs { break }
        }
        return (best!, runs)
    }

    /// `once` returns (milliseconds, state); the fastest run's time and state.
    static func bestMs<State>(
        reps: Int, _ once: () throws -> (Double, State)
    ) rethrows -> (ms: Double, state: State, runs: Int) {
        let r = try fastest(reps: reps, time: { $0.0 }, once)
        return (r.best.0, r.best.1, r.runs)
    }

    /// W1.trace and W1.random.N: `once` returns (ns per op, metrics, state to keep from the fastest
    /// run). Memory metrics (names ending in `rss_bytes`) come from the first run, and
    /// `peak_rss_bytes` is taken right after it (later runs reuse memory the allocator kept); the
    /// first run's ns per op is reported too, as `first_run_ns_per_op`.
    static func bestOf<State>(
        _ once: () throws -> (Double, [(String, Metric)], State)
    ) rethrows -> (best: Double, metrics: [(String, Metric)], state: State, runs: Int) {
        var memory: [(String, Metric)] = []
        let r = try fastest(reps: runs, time: { $0.0 }, first: { f in
            memory = f.1.filter { $0.0.hasSuffix("rss_bytes") }
            memory.append(("peak_rss_bytes", .int(Memory.rssPeak() - Memory.baseRSS)))
            memory.append(("first_run_ns_per_op", .double(f.0)))
        }, once)
        var metrics = r.best.1.filter { !$0.0.hasSuffix("rss_bytes") }
        metrics += memory
        return (r.best.0, metrics, r.best.2, r.runs)
    }

    /// The note text: "best of up to N runs (k run(s))".
    static func note(_ reps: Int, _ runs: Int, _ what: String = "runs") -> String {
        "best of up to \(max(1, min(reps, Repeat.reps))) \(what) (\(runs) done)"
    }
}
