import Foundation
import ListCRDT
import ListSyncSimulation
import ListSync
import ListSyncTestSupport

// The workloads of Benchmarks/WORKLOADS.md, for ListSync. Preparation (parsing, generating the
// ops, building the initial document, making the values) is untimed; the timed sections hold only
// the engine calls and the loop around them.

/// The live items at the end of the default trace (automerge-paper); a workload that replays the
/// trace compares with the count of its own replay, so that `--trace` may name another.
let traceLive = 104_852
let randomSizes = [1_000, 10_000, 100_000, 1_000_000]
let allWorkloads = ["W1.trace"] + randomSizes.map { "W1.random.\($0)" } + [
    "W2.history", "W3.stream.1", "W3.stream.100", "W4.moves", "W4.merge", "W5.sections", "W6.memory",
] + outOfOrderWorkloads + ["W8.concurrent", "W9.tcp", "W10.store", "W11.crypto"]  // W8Concurrent.swift, W9Tcp.swift, W10Store.swift, W11Crypto.swift
    + churnSizes.map { "W12.churn.\($0)" } + churnSizes.map { "W12.uncompacted.\($0)" }  // W12Churn.swift
    + catchUpSizes.map { "W13.catchup.\($0)" }  // W13Catchup.swift
    + ["W14.kanban"]  // W14Kanban.swift
    + ["W16.text"]  // W16Text.swift
    + ["W17.notes"]  // W17Notes.swift
    + bigListSizes.map { "W15.biglist.\($0)" }  // W15BigList.swift

/// W15.open.N (not among the defaults): W15.biglist.N's open only, for profiling it.
func isOpenOnlyWorkload(_ w: String) -> Bool {
    w.hasPrefix("W15.open.") && Int(w.dropFirst("W15.open.".count)).map(bigListSizes.contains) == true
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

struct Context {
    var tracePath: String
    var executable: String
    /// `--concurrent-trace PATH`: the trace W8.concurrent replays instead of clownschool's.
    var concurrentTracePath: String? = nil
    /// `--kanban-script PATH`: W14.kanban's operation script (default: Benchmarks/results/W14.kanban.json).
    var kanbanScriptPath: String? = nil
    /// `--deliver causal|authors|transactions`: how W8 workloads deliver (default: by workload).
    var deliver: DeliverOption? = nil

    /// The trace, parsed (untimed). `finalText` is nil when `NAME.final.txt` is missing.
    func loadTrace() throws -> EditingTrace {
        let url = URL(fileURLWithPath: tracePath)
        guard url.pathExtension == "jsonl" else { throw BenchError("--trace must name a .jsonl file: \(tracePath)") }
        guard FileManager.default.fileExists(atPath: tracePath) else { throw BenchError("trace not found: \(tracePath)") }
        return try EditingTrace(named: url.deletingPathExtension().lastPathComponent, in: url.deletingLastPathComponent())
    }
}

func run(_ workload: String, _ ctx: Context) throws -> BenchResult {
    switch workload {
    case "W1.trace": return try w1Trace(ctx)
    case "W2.history": return try w2History(ctx)
    case "W3.stream.1": return try w3Stream(ctx, every: 1)
    case "W3.stream.100": return try w3Stream(ctx, every: 100)
    case "W4.moves": return try w4Moves()
    case "W4.merge": return try w4Merge()
    case "W5.sections": return try w5Sections()
    case "W6.memory": return try w6Memory(ctx)
    case "W8.concurrent": return try w8Concurrent(ctx)
    case "W9.tcp": return try w9Tcp(ctx)
    case "W11.crypto": return try w11Crypto()
    case "W10.store": return try w10Store(ctx)
    case "W14.kanban": return try w14Kanban(ctx)
    case "W16.text": return try w16Text(ctx)
    case "W17.notes": return try w17Notes(ctx)
    default:
        if let (order, n) = outOfOrderWorkload(workload) { return try w7OutOfOrder(order: order, n: n) }
        if isGeneratedTraceWorkload(workload) { return try w8Concurrent(ctx, workload: workload) }
        if workload.hasPrefix("W12.churn."), let n = Int(workload.dropFirst("W12.churn.".count)),
           churnSizes.contains(n) {
            return try w12Churn(n: n)
        }
        if workload.hasPrefix("W12.uncompacted."), let n = Int(workload.dropFirst("W12.uncompacted.".count)),
           churnSizes.contains(n) {
            return try w12Churn(n: n, compact: false)
        }
        if workload.hasPrefix("W13.catchup."), let n = Int(workload.dropFirst("W13.catchup.".count)),
           catchUpSizes.contains(n) {
            return try w13CatchUp(n: n)
        }
        if workload.hasPrefix("W15.biglist."), let n = Int(workload.dropFirst("W15.biglist.".count)),
           bigListSizes.contains(n) {
            return try w15BigList(n: n, ctx)
        }
        if workload.hasPrefix("W15.open."), let n = Int(workload.dropFirst("W15.open.".count)),
           bigListSizes.contains(n) {
            return try w15BigList(n: n, ctx, openOnly: true)
        }
        if workload.hasPrefix("W1.random."), let n = Int(workload.dropFirst("W1.random.".count)),
           randomSizes.contains(n) {
            return try w1Random(n: n)
        }
        throw BenchError("unknown workload \(workload) (known: \(allWorkloads.joined(separator: ", ")))")
    }
}

// MARK: W1

/// Applies trace lines lo..<hi to section 0 of `doc`, collecting the operations when asked.
@inline(__always)
func applyTrace(_ doc: inout ListDocument, _ edits: [EditingTrace.Edit], _ lo: Int, _ hi: Int,
                collect: inout [ListOperation]?) throws {
    let byteValues = byteValues  // one lazy-global check, not one per insert
    for k in lo..<hi {
        // The edit read in place (a copy of it would retain its bytes), as W16.text's harness
        // reads its edits.
        let position = edits[k].position
        for _ in 0..<edits[k].deleteCount {
            let op = try doc.deleteItem(atRow: position, inSection: 0)
            collect?.append(op)
        }
        for j in 0..<edits[k].text.count {
            let op = try doc.insertItem(atRow: position + j, inSection: 0, value: byteValues[Int(edits[k].text[j])])
            collect?.append(op)
        }
    }
}

/// One timed run of the whole trace on a fresh document. Returns (ns, doc, doc_peak_rss_bytes).
func traceOnce(_ edits: [EditingTrace.Edit]) throws -> (UInt64, ListDocument, Int) {
    Memory.resetPeak()
    let before = Memory.rssNow()
    var doc = ListDocument(replica: ReplicaID(1))
    try doc.insertSection(at: 0)
    var none: [ListOperation]? = nil
    let t0 = nowNs()
    try applyTrace(&doc, edits, 0, edits.count, collect: &none)
    let ns = nowNs() - t0
    return (ns, doc, Memory.rssPeak() - before)
}

func w1Trace(_ ctx: Context, keep: Bool = false) throws -> BenchResult {
    let trace = try ctx.loadTrace()
    let edits = trace.edits
    let total = edits.count
    let r = try Repeat.bestOf { () throws -> (Double, [(String, Metric)], ListDocument) in
        let (ns, doc, docPeak) = try traceOnce(edits)
        let perOp = Double(ns) / Double(total)
        return (perOp, [("ns_per_op", .double(perOp)), ("doc_peak_rss_bytes", .int(docPeak))], doc)
    }
    var res = BenchResult(workload: "W1.trace", metrics: r.metrics, ops: total)
    let got = textBytes(r.state)
    res.set("live_items", got.count)
    res.ok = trace.finalText != nil && got == trace.finalText!
    res.note = "one trace line = one op (one insertItem(atRow:inSection:value:) or deleteItem(atRow:inSection:) "
        + "call per element); "
        + Repeat.note(Repeat.runs, r.runs)
    if trace.finalText == nil { res.note += "; no .final.txt next to the trace, cannot verify" }
    return res
}

func w1Random(n: Int) throws -> BenchResult {
    let ops = genRandom(n: n)
    let values = ops.map { intValue($0.value) }
    let r = try Repeat.bestOf { () throws -> (Double, [(String, Metric)], ListDocument) in
        var doc = try buildList(replica: 1, n: n)  // untimed
        let t0 = nowNs()
        for (k, op) in ops.enumerated() {
            if op.insert {
                try doc.insertItem(atRow: op.pos, inSection: 0, value: values[k])
            } else {
                try doc.deleteItem(atRow: op.pos, inSection: 0)
            }
        }
        let perOp = Double(nowNs() - t0) / Double(ops.count)
        return (perOp, [("ns_per_op", .double(perOp))], doc)
    }
    var res = BenchResult(workload: "W1.random.\(n)", metrics: r.metrics, ops: ops.count)
    let expectedLength = n + ops.reduce(0) { $0 + ($1.insert ? 1 : -1) }
    if n <= 100_000 {
        var model = Array(0..<n)
        applyFlat(&model, ops)
        res.ok = intValues(r.state) == model
    } else {
        res.ok = try r.state.itemCount(inSection: 0) == expectedLength
    }
    // How long the untimed build takes (ListCRDT has no bulk insert: n single inserts).
    let b0 = nowNs()
    _ = try buildList(replica: 1, n: n)
    let buildMs = Double(nowNs() - b0) / 1e6
    res.set("build_ms", buildMs)
    res.note = "final length \(expectedLength); build untimed (\(n) single insertItem calls, \(String(format: "%.0f", buildMs)) ms); "
        + Repeat.note(Repeat.runs, r.runs)
    return res
}

// MARK: W2

/// Decodes a history batch and receives it into a fresh document; reads the length.
func loadHistory(_ bytes: [UInt8]) throws -> (Double, ListDocument) {
    let t0 = nowNs()
    // Decodes and applies in one call: typed runs and delete runs go in without one
    // ListOperation per character (ListDocument+Load.swift).
    var doc = ListDocument(replica: ReplicaID(99))
    let errors = try doc.receive(encoded: bytes, maxOperations: Int.max).refused
    _ = doc.totalItemCount
    let ms = Double(nowNs() - t0) / 1e6
    guard errors.isEmpty else { throw BenchError("history load refused \(errors.count) operations: \(errors[0])") }
    return (ms, doc)
}

func w2History(_ ctx: Context) throws -> BenchResult {
    let trace = try ctx.loadTrace()
    let (_, doc, _) = try traceOnce(trace.edits)
    let w1ok = trace.finalText != nil && textBytes(doc) == trace.finalText!
    let live = try doc.itemCount(inSection: 0)

    // Each timing: best of up to 5 (Repeat); every load goes into a fresh document.
    let eh = Repeat.bestMs(reps: Repeat.loads) { () -> (Double, [UInt8]) in
        let t0 = nowNs()
        let history = doc.encodedHistory()   // the bytes of ListOperation.encode(doc.operations), from the log
        return (Double(nowNs() - t0) / 1e6, history)
    }
    let es = Repeat.bestMs(reps: Repeat.loads) { () -> (Double, [UInt8]) in
        let t0 = nowNs()
        let snapshot = doc.encodedSnapshot()   // the state snapshot (format v2)
        return (Double(nowNs() - t0) / 1e6, snapshot)
    }
    let ehs = Repeat.bestMs(reps: Repeat.loads) { () -> (Double, [UInt8]) in
        let t0 = nowNs()
        let snapshot = doc.encodedSnapshot(format: .history)   // format v1: the history behind a header
        return (Double(nowNs() - t0) / 1e6, snapshot)
    }
    let history = eh.state, snapshot = es.state, historySnapshot = ehs.state

    // Every timed load's document is released right after it (as peers.py does with Loro's and
    // Yrs's), so that each load may reuse the memory of the one before; one more, untimed load is
    // checked (released before the snapshot loads).
    let (lh, historyOK): ((ms: Double, runs: Int), Bool) = try {
        let r = try Repeat.bestMs(reps: Repeat.loads) { () throws -> (Double, Int) in
            let (ms, loaded) = try loadHistory(history)
            return (ms, try loaded.itemCount(inSection: 0))
        }
        let loaded = try loadHistory(history).1
        let ok = r.state == live && textBytes(loaded) == textBytes(doc)
        return ((r.ms, r.runs), ok)
    }()
    func loadSnapshot(_ bytes: [UInt8]) throws -> (ms: Double, state: Int, runs: Int) {
        try Repeat.bestMs(reps: Repeat.loads) { () throws -> (Double, Int) in
            let l0 = nowNs()
            let fromSnapshot = try ListDocument(snapshot: bytes, replica: ReplicaID(99))
            let count = try fromSnapshot.itemCount(inSection: 0)
            return (Double(nowNs() - l0) / 1e6, count)
        }
    }
    let ls = try loadSnapshot(snapshot)
    let lhs = try loadSnapshot(historySnapshot)
    let snapshotOK = try {
        let loaded = try ListDocument(snapshot: snapshot, replica: ReplicaID(99))
        return loaded.encodedState() == doc.encodedState() && loaded.operationCount == doc.operationCount
    }()

    var res = BenchResult(workload: "W2.history", ops: 1)
    res.set("history_bytes", history.count)
    res.set("snapshot_bytes", snapshot.count)
    res.set("load_history_ms", lh.ms)
    res.set("load_snapshot_ms", ls.ms)
    res.set("history_snapshot_bytes", historySnapshot.count)
    res.set("load_history_snapshot_ms", lhs.ms)
    res.set("export_history_ms", eh.ms)
    res.set("export_snapshot_ms", es.ms)
    res.set("export_history_snapshot_ms", ehs.ms)
    res.set("operations", doc.operationCount)
    res.ok = w1ok && historyOK && snapshotOK && ls.state == live && lhs.state == live
    res.note = "history = doc.encodedHistory() (the bytes of ListOperation.encode(doc.operations), encoded from the log "
        + "a window of 4,096 operations at a time: export_history_ms times it), load = receive(encoded:) into a fresh document; "
        + "snapshot = encodedSnapshot() (format v2: the document's tables), load = ListDocument(snapshot:replica:) "
        + "(rebuilds the tables, no replay); history_snapshot = encodedSnapshot(format: .history) (format v1: "
        + "version vector + the same batch; its load replays the history); "
        + "load_history_ms \(Repeat.note(Repeat.loads, lh.runs, "loads")), "
        + "load_snapshot_ms \(Repeat.note(Repeat.loads, ls.runs, "loads")), "
        + "load_history_snapshot_ms \(Repeat.note(Repeat.loads, lhs.runs, "loads")), "
        + "exports \(Repeat.note(Repeat.loads, min(eh.runs, es.runs, ehs.runs)))"
    return res
}

// MARK: W3

/// A (a client session) streaming to B over an InMemoryNetwork without faults: each delta is
/// `ClientSession.push` frames (the protocol's `operations` messages), which B decodes and applies.
struct SyncPair {
    var docs: [ListDocument]
    var client = ClientSession(maxFrame: 1 << 20)
    var net = InMemoryNetwork(seed: 3, faults: .none)
    var bytes = 0, frames = 0, deliverErrors = 0
    static let document = DocumentID(high: 3, low: 3)

    init(a: ListDocument, b: ListDocument) {
        docs = [a, b]
    }

    mutating func forward(_ ops: [ListOperation]) {
        for case let .send(frame) in client.push(Self.document, ops) {
            bytes += frame.count
            frames += 1
            net.send(from: 0, to: 1, frame)
        }
    }

    /// Delivers every frame in flight.
    mutating func drain() throws {
        while let d = net.nextDelivery() {
            guard case let .operations(_, _, ops) = try SyncMessage(decoding: d.frame) else { continue }
            deliverErrors += docs[d.to].receive(ops).refused.count
        }
    }

    mutating func connect() throws {
        forward(docs[0].operations)
        try drain()
    }
}

func w3Stream(_ ctx: Context, every: Int) throws -> BenchResult {
    let trace = try ctx.loadTrace()
    let edits = trace.edits
    var a = ListDocument(replica: ReplicaID(1))
    try a.insertSection(at: 0)
    var pair = SyncPair(a: a, b: ListDocument(replica: ReplicaID(2)))
    try pair.connect()  // untimed: B gets the section
    pair.bytes = 0
    pair.frames = 0
    var deltas = 0
    var batch: [ListOperation]? = []
    batch!.reserveCapacity(max(16, every * 2))

    let t0 = nowNs()
    var lo = 0
    while lo < edits.count {
        let hi = min(edits.count, lo + every)
        try applyTrace(&pair.docs[0], edits, lo, hi, collect: &batch)
        pair.forward(batch!)
        batch!.removeAll(keepingCapacity: true)
        deltas += 1
        try pair.drain()
        lo = hi
    }
    let ms = Double(nowNs() - t0) / 1e6

    var res = BenchResult(workload: "W3.stream.\(every)", ops: edits.count)
    res.set("ms", ms)
    res.set("bytes", pair.bytes)
    res.set("deltas", deltas)
    res.set("frames", pair.frames)
    res.ok = trace.finalText != nil && textBytes(pair.docs[1]) == trace.finalText! && pair.deliverErrors == 0
    res.note = "\(deltas) deltas: A's operations since its previous delta, ClientSession.push -> "
        + "one SyncMessage.operations frame each -> InMemoryNetwork (no faults) -> decoded -> "
        + "B.receive; bytes = sum of frame sizes (19-byte message header: version, type, document id, batch)"
    return res
}

// MARK: W4

func w4Moves() throws -> BenchResult {
    let n = 10_000, count = 100_000
    let (ops, expected) = genMoves(n: n, count: count, seed: 4)
    // The move loop: best of up to 3 runs, each on a freshly built document (build untimed).
    // Every run's final list is checked; the history is the first run's, and so is the memory.
    var docPeak = 0, peak = 0
    var history: [UInt8] = []
    var got: [Int] = []
    var allMovedOK = true, run = 0
    let moves = try Repeat.fastest(reps: Repeat.moveRuns, time: { Double($0) }) { () throws -> UInt64 in
        run += 1
        let first = run == 1
        if first { Memory.resetPeak() }
        let before = Memory.rssNow()
        var doc = try buildList(replica: 1, n: n)  // untimed
        let t0 = nowNs()
        for (f, t) in ops {
            try doc.moveItem(from: IndexPath(item: f, section: 0), to: IndexPath(item: t, section: 0))
        }
        let ns = nowNs() - t0
        let values = intValues(doc)
        allMovedOK = allMovedOK && values == expected
        if first {
            docPeak = Memory.rssPeak() - before
            peak = Memory.rssPeak() - Memory.baseRSS
            history = ListOperation.encode(doc.operations)
            got = values
        }
        return ns
    }
    let ns = moves.best
    // As in W2: every timed load's document is released right after it; one more is checked.
    let load = try Repeat.bestMs(reps: Repeat.loads) { () throws -> (Double, Int) in
        let (ms, loaded) = try loadHistory(history)
        return (ms, loaded.totalItemCount)
    }
    let loaded = try loadHistory(history).1

    var res = BenchResult(workload: "W4.moves", ops: count)
    res.set("ms", Double(ns) / 1e6)
    res.set("ns_per_op", Double(ns) / Double(count))
    res.set("history_bytes", history.count)
    res.set("load_ms", load.ms)
    res.set("doc_peak_rss_bytes", docPeak)
    res.set("peak_rss_bytes", peak)  // after the first move run, as in W1
    res.ok = allMovedOK && load.state == expected.count && intValues(loaded) == expected
    let same = ops.filter { $0.from == $0.to }.count
    res.note = "first moves \(ops.prefix(3).map { "(\($0.from)→\($0.to))" }.joined(separator: ", ")), "
        + "final list starts \(got.prefix(5).map(String.init).joined(separator: ", ")); "
        + "move = moveItem(from:to:) (\(same) moves with from == to are no-ops and make no operation); "
        + "history = ListOperation.encode(doc.operations) incl. the 10,000 inserts; load = decode + receive"
    let movesNote = Repeat.note(Repeat.moveRuns, moves.runs), loadNote = Repeat.note(Repeat.loads, load.runs, "loads")
    res.note += "; ms \(movesNote) on fresh documents, load_ms \(loadNote)"
    return res
}

/// The outcome of one W4.merge run.
struct MergeRun {
    var ms: Double
    var values: [Int]
    var converged: Bool
    var exchangeBytes: Int
    var refused: Int
}

func w4Merge() throws -> BenchResult {
    let n = 10_000
    let (opsA, _) = genMoves(n: n, count: n, seed: 41)
    let (opsB, _) = genMoves(n: n, count: n, seed: 42)

    /// One run: fresh replicas (untimed setup), then the timed moves + exchange.
    func once() throws -> MergeRun {
        var a = try buildList(replica: 1, n: n)
        var b = ListDocument(replica: ReplicaID(2))
        let errs = b.receive(a.operations).refused
        guard errs.isEmpty else { throw BenchError("B could not load A's history: \(errs[0])") }
        let fork = a.version

        let t0 = nowNs()
        for (f, t) in opsA {
            try a.moveItem(from: IndexPath(item: f, section: 0), to: IndexPath(item: t, section: 0))
        }
        for (f, t) in opsB {
            try b.moveItem(from: IndexPath(item: f, section: 0), to: IndexPath(item: t, section: 0))
        }
        let uA = ListOperation.encode(a.operations(since: fork))
        let uB = ListOperation.encode(b.operations(since: fork))
        let errA = a.receive(try ListOperation.decode(uB, maxValueSize: ListDocument.defaultMaxValueSize, maxOperations: Int.max)).refused
        let errB = b.receive(try ListOperation.decode(uA, maxValueSize: ListDocument.defaultMaxValueSize, maxOperations: Int.max)).refused
        let ms = Double(nowNs() - t0) / 1e6

        let va = intValues(a)
        return MergeRun(ms: ms, values: va, converged: va == intValues(b), exchangeBytes: uA.count + uB.count,
                        refused: errA.count + errB.count)
    }

    // Best of up to 3 runs; every run is checked.
    var runs: [MergeRun] = []
    var peak = 0
    let r = try Repeat.fastest(reps: Repeat.moveRuns, time: { $0.ms },
                               first: { _ in peak = Memory.rssPeak() - Memory.baseRSS }) { () throws -> MergeRun in
        let m = try once()
        runs.append(m)
        return m
    }
    let first = runs[0]
    let va = first.values
    let unique = va.sorted() == Array(0..<n)
    let allSame = runs.allSatisfy { $0.values == va && $0.converged && $0.refused == 0 }
    var res = BenchResult(workload: "W4.merge", ops: 2 * n)
    res.set("ms", r.best.ms)
    res.set("items_after_merge", va.count)
    res.set("exchange_bytes", first.exchangeBytes)
    res.set("peak_rss_bytes", peak)  // after the first run, as in W1
    res.ok = first.converged && unique && allSame
    res.note = "converged=\(first.converged), items after merge=\(va.count), each value once=\(unique); "
        + "exchange = encode(operations(since: fork)) both ways, decode + receive (timed); "
        + "ms \(Repeat.note(Repeat.moveRuns, r.runs)) on fresh replicas"
    if first.refused > 0 { res.note += "; receive refused \(first.refused) operations" }
    if !allSame { res.note += "; the runs did not all end in the same converged list" }
    return res
}

// MARK: W5

func w5Sections() throws -> BenchResult {
    let (ops, expected) = genSections()
    var doc = ListDocument(replica: ReplicaID(1))  // untimed: 100 sections x 100 items
    for s in 0..<100 {
        try doc.insertSection(at: s)
        for i in 0..<100 { try doc.insertItem(at: IndexPath(item: i, section: s), value: intValue(s * 100 + i)) }
    }
    let t0 = nowNs()
    for op in ops {
        switch op {
        case let .section(from, to):
            try doc.moveSection(from: from, to: to)
        case let .item(s, from, d, to):
            try doc.moveItem(from: IndexPath(item: from, section: s), to: IndexPath(item: to, section: d))
        }
    }
    let ns = nowNs() - t0
    var res = BenchResult(workload: "W5.sections", ops: ops.count)
    res.set("ms", Double(ns) / 1e6)
    res.set("ns_per_op", Double(ns) / Double(ops.count))
    res.ok = allSectionValues(doc) == expected
    let sectionMoves = ops.filter { if case .section = $0 { return true } else { return false } }.count
    res.note = "\(sectionMoves) section moves; sizes of sections 0..4: "
        + "\(expected.prefix(5).map { String($0.count) }.joined(separator: ", ")); "
        + "section move = moveSection(from:to:), item move = moveItem(from:to:) within or across sections"
    return res
}

// MARK: W6

/// W1.trace (one run) and W4.moves, each in its own process of this executable.
func w6Memory(_ ctx: Context) throws -> BenchResult {
    var results: [String: [String: Any]] = [:]
    for w in ["W1.trace", "W4.moves"] {
        results[w] = try runChild([ctx.executable, "--workload", w, "--json", "--reps", "1", "--trace", ctx.tracePath])
    }
    func docRSS(_ w: String) throws -> Double {
        guard let m = results[w]?["metrics"] as? [String: Any], let v = m["doc_peak_rss_bytes"] as? NSNumber else {
            throw BenchError("\(w) reported no doc_peak_rss_bytes")
        }
        return v.doubleValue
    }
    let r1 = try docRSS("W1.trace"), r4 = try docRSS("W4.moves")
    // The trace's own live items (W1 reports them), so that `--trace` may name another.
    let live = ((results["W1.trace"]?["metrics"] as? [String: Any])?["live_items"] as? NSNumber)?.doubleValue ?? Double(traceLive)
    var res = BenchResult(workload: "W6.memory", ops: 0)
    res.set("bytes_per_live_item", r1 / live)
    res.set("bytes_per_deleted_item", r4 / 100_000)
    res.set("w1_doc_peak_rss_bytes", Int(r1))
    res.set("w4_doc_peak_rss_bytes", Int(r4))
    res.ok = (results["W1.trace"]?["ok"] as? Bool ?? false) && (results["W4.moves"]?["ok"] as? Bool ?? false)
    res.note = "W1.trace doc RSS / live items; W4.moves doc RSS / moves (see WORKLOADS.md)"
    return res
}

/// Runs this executable with `args` and parses the JSON object it prints.
func runChild(_ args: [String]) throws -> [String: Any] {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: args[0])
    p.arguments = Array(args.dropFirst())
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else {
        throw BenchError("\(args.dropFirst().joined(separator: " ")) exited with status \(p.terminationStatus)")
    }
    let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("{") }
    guard let line = lines.last,
          let obj = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
        throw BenchError("\(args.dropFirst().joined(separator: " ")) printed no JSON object")
    }
    return obj
}

// MARK: W7

let outOfOrderSizes = [10_000, 100_000]
let outOfOrderWorkloads = ["reverse", "shuffled"].flatMap { o in outOfOrderSizes.map { "W7.\(o).\($0)" } }

/// ("reverse" or "shuffled", n) for a W7 workload name.
func outOfOrderWorkload(_ name: String) -> (String, Int)? {
    let parts = name.split(separator: ".")
    guard parts.count == 3, parts[0] == "W7", parts[1] == "reverse" || parts[1] == "shuffled",
          let n = Int(parts[2]), outOfOrderSizes.contains(n) else { return nil }
    return (String(parts[1]), n)
}

/// W7: replica 1 makes a section and n random inserts in it (untimed); a fresh replica 2 receives
/// the n + 1 operations one `receive(_:)` call each, newest first or shuffled (timed).
func w7OutOfOrder(order: String, n: Int) throws -> BenchResult {
    let gen = genOutOfOrder(n: n)
    var sender = ListDocument(replica: ReplicaID(1))
    var ops = [try sender.insertSection(at: 0)]
    ops.reserveCapacity(n + 1)
    for k in 0..<n {
        ops.append(try sender.insertItem(atRow: gen.positions[k], inSection: 0, value: byteValues[Int(gen.values[k])]))
    }
    let expected = sender.snapshot()
    let delivery = order == "reverse" ? gen.reverse : gen.shuffled
    let deliveryOps = delivery.map { ops[$0] }  // untimed: the timed loop walks one array

    struct Run {
        var ns: UInt64
        var ok: Bool
        var pending: Int
        var buffered: Int  // operations that waited in the causal buffer (outcome .buffered)
    }
    // Best of up to 3 runs, each on a fresh receiver; every run is checked.
    var allOK = true
    let r = try Repeat.fastest(reps: w7Runs, time: { Double($0.ns) }) { () throws -> Run in
        var receiver = ListDocument(replica: ReplicaID(2))
        var buffered = 0
        let t0 = nowNs()
        for op in deliveryOps {
            if try receiver.receive(op) == .buffered { buffered += 1 }
        }
        let ns = nowNs() - t0
        let pending = receiver.pendingCount
        let ok = pending == 0 && receiver.snapshot() == expected
        allOK = allOK && ok
        return Run(ns: ns, ok: ok, pending: pending, buffered: buffered)
    }
    let best = r.best
    var res = BenchResult(workload: "W7.\(order).\(n)", ops: n + 1)
    res.set("ms", Double(best.ns) / 1e6)
    res.set("ns_per_op", Double(best.ns) / Double(n + 1))
    res.set("buffered_ops", best.buffered)
    res.set("pending_after", best.pending)
    res.ok = allOK
    res.note = "\(n) random inserts + the section's insert, received one receive(_:) call each "
        + (order == "reverse" ? "newest first" : "in a seeded shuffle (SplitMix64 seed 77)")
        + "; final list starts \(String(decoding: expected.sections[0].items.prefix(12).flatMap { $0.value }, as: UTF8.self))"
        + "; \(best.buffered) of them waited in the causal buffer; ok = pendingCount 0 and snapshot (ids + values) "
        + "equal to the sender's; ms \(Repeat.note(w7Runs, r.runs)) on fresh receivers"
    return res
}

/// W7's repetition: best of up to 3 runs, as W4.moves.
let w7Runs = 3
