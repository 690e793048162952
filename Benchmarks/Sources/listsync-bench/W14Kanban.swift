import Foundation
@_spi(Testing) import ListCRDT

// W14.kanban (Benchmarks/WORKLOADS.md, issue 43): 10,000 cards of six fields in 8 sections, three
// replicas editing their own copies concurrently from one operation script
// (Benchmarks/compare/kanban_script.py writes it; compare/peers.py replays the same file on Loro
// and Yrs), then merged. `--kanban-script PATH` names the file (default:
// Benchmarks/results/W14.kanban.json, which compare.sh writes).

/// One operation of the script (see kanban_script.py).
enum KanbanOp {
    case move(fs: Int, fr: Int, ts: Int, tr: Int)
    case set(s: Int, r: Int, name: String, value: FieldValue)
    case count(s: Int, r: Int, by: Int64)
    case addTag(s: Int, r: Int, tag: String)
    case removeTag(s: Int, r: Int, tag: String)
    case delete(s: Int, r: Int)
}

struct KanbanCard {
    var card: Int, section: Int
    var fields: [String: FieldChange]
    var votes: Int
}

struct KanbanScript {
    var sections: Int
    var cards: [KanbanCard]
    var replicas: [[KanbanOp]]
    /// Cards nobody deletes (each must be there exactly once after the merge).
    var live: Set<Int>
    /// Per card: its board votes plus every increment; the replicas that delete it, that move it.
    var votes: [Int: Int]
    var deletedBy: [Int: Set<Int>] = [:], movedBy: [Int: Set<Int>] = [:]

    static func dueDate(_ ms: Any?) -> FieldValue {
        .date(Date(timeIntervalSince1970: Double((ms as? NSNumber)?.int64Value ?? 0) / 1000))
    }

    init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw BenchError("W14 script not found: \(path) (write it: python3 Benchmarks/compare/kanban_script.py \(path))")
        }
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let sections = root["sections"] as? Int, let initial = root["initial"] as? [[String: Any]],
              let reps = root["replicas"] as? [[[Any]]] else { throw BenchError("W14 script \(path) is malformed") }
        self.sections = sections
        cards = try initial.map { c in
            guard let k = c["card"] as? Int, let s = c["section"] as? Int, let title = c["title"] as? String,
                  let notes = c["notes"] as? String, let done = c["done"] as? Bool, let votes = c["votes"] as? Int,
                  let tags = c["tags"] as? [String] else { throw BenchError("W14 script: malformed card \(c)") }
            return KanbanCard(card: k, section: s, fields: [
                "title": .set(.string(title)), "notes": .set(.string(notes)), "done": .set(.bool(done)),
                "votes": .increment(Int64(votes)), "tags": .insert(tags), "due": .set(Self.dueDate(c["due"])),
            ], votes: votes)
        }
        var votes = Dictionary(uniqueKeysWithValues: cards.map { ($0.card, $0.votes) })
        var deletedBy: [Int: Set<Int>] = [:], movedBy: [Int: Set<Int>] = [:]
        replicas = try reps.enumerated().map { rep, ops in
            try ops.map { op -> KanbanOp in
                func i(_ k: Int) -> Int { (op[k] as? NSNumber)?.intValue ?? -1 }
                switch op.first as? String {
                case "m":
                    movedBy[i(5), default: []].insert(rep)
                    return .move(fs: i(1), fr: i(2), ts: i(3), tr: i(4))
                case "s":
                    let name = op[4] as? String ?? ""
                    let v: FieldValue
                    switch name {
                    case "done": v = .bool(op[5] as? Bool ?? false)
                    case "due": v = Self.dueDate(op[5])
                    default: v = .string(op[5] as? String ?? "")
                    }
                    return .set(s: i(1), r: i(2), name: name, value: v)
                case "c":
                    votes[i(3), default: 0] += i(4)
                    return .count(s: i(1), r: i(2), by: Int64(i(4)))
                case "a": return .addTag(s: i(1), r: i(2), tag: op[4] as? String ?? "")
                case "r": return .removeTag(s: i(1), r: i(2), tag: op[4] as? String ?? "")
                case "d":
                    deletedBy[i(3), default: []].insert(rep)
                    return .delete(s: i(1), r: i(2))
                default: throw BenchError("W14 script: unknown operation \(op)")
                }
            }
        }
        live = Set(cards.map(\.card)).subtracting(deletedBy.keys)
        self.votes = votes
        self.deletedBy = deletedBy
        self.movedBy = movedBy
    }

    var operationCount: Int { replicas.reduce(0) { $0 + $1.count } }
}

/// The default script path: Benchmarks/results/W14.kanban.json.
func defaultKanbanScript() -> String {
    URL(fileURLWithPath: defaultTrace()).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("results/W14.kanban.json").path
}

/// Replica 1's initial board: the sections, then each card (its number as the item value) and
/// one `writeFields` with its six fields.
func kanbanBoard(_ script: KanbanScript) throws -> ListDocument {
    var doc = ListDocument(replica: ReplicaID(1))
    for s in 0..<script.sections { try doc.insertSection(at: s) }
    var rows = [Int](repeating: 0, count: script.sections)
    for c in script.cards {
        let at = IndexPath(item: rows[c.section], section: c.section)
        try doc.insertItem(at: at, value: intValue(c.card))
        rows[c.section] += 1
        _ = try doc.writeFields(c.fields, ofItem: try doc.itemID(at: at))
    }
    return doc
}

/// One replica's script on its own document: one engine call per operation (plus the item id
/// lookup of the row a field write names).
func kanbanEdit(_ doc: inout ListDocument, _ ops: [KanbanOp]) throws {
    for op in ops {
        switch op {
        case let .move(fs, fr, ts, tr):
            _ = try doc.moveItem(from: IndexPath(item: fr, section: fs), to: IndexPath(item: tr, section: ts))
        case let .set(s, r, name, value):
            _ = try doc.writeFields([name: .set(value)], ofItem: try doc.itemID(at: IndexPath(item: r, section: s)))
        case let .count(s, r, by):
            _ = try doc.writeFields(["votes": .increment(by)], ofItem: try doc.itemID(at: IndexPath(item: r, section: s)))
        case let .addTag(s, r, tag):
            _ = try doc.writeFields(["tags": .insert([tag])], ofItem: try doc.itemID(at: IndexPath(item: r, section: s)))
        case let .removeTag(s, r, tag):
            _ = try doc.writeFields(["tags": .delete([tag])], ofItem: try doc.itemID(at: IndexPath(item: r, section: s)))
        case let .delete(s, r):
            _ = try doc.deleteItem(at: IndexPath(item: r, section: s))
        }
    }
}

/// What a replica shows: per section, each card's number and fields.
func kanbanState(_ doc: ListDocument) -> [[KanbanShown]] {
    doc.snapshot().sections.map { $0.items.map { KanbanShown(card: intOf($0.value), fields: $0.fields) } }
}

struct KanbanShown: Equatable {
    var card: Int
    var fields: [String: Field]
}

func w14Kanban(_ ctx: Context) throws -> BenchResult {
    let path = ctx.kanbanScriptPath ?? defaultKanbanScript()
    let script = try KanbanScript(path: path)  // untimed: reading and parsing
    let n = script.replicas.count
    let ops = script.operationCount

    // Untimed (except build_ms): replica 1 builds the board, the others receive its history.
    var buildMs = 0.0
    func fresh() throws -> [ListDocument] {
        let t0 = nowNs()
        let a = try kanbanBoard(script)
        buildMs = Double(nowNs() - t0) / 1e6
        let history = a.operations
        return try (0..<n).map { k in
            if k == 0 { return a }
            var d = ListDocument(replica: ReplicaID(UInt64(k + 1)))
            let refused = d.receive(history).refused
            guard refused.isEmpty else { throw BenchError("replica \(k + 1) refused the board: \(refused[0])") }
            return d
        }
    }

    struct Run { var ms: Double; var makeMs: Double; var mergeMs: Double; var docs: [ListDocument]; var bytes: Int; var refused: Int }
    var memory = 0, firstBuildMs = 0.0, states: [[[KanbanShown]]] = []
    let r = try Repeat.fastest(reps: Repeat.moveRuns, time: { $0.ms }) { () throws -> Run in
        let before = Memory.trimmedRSS()
        var docs = try fresh()
        let fork = docs[0].version
        let t0 = nowNs()
        for k in 0..<n { try kanbanEdit(&docs[k], script.replicas[k]) }
        let t1 = nowNs()
        // Merge: each replica's new operations encoded once, decoded and received by each other one.
        let updates = docs.map { ListOperation.encode($0.operations(since: fork)) }
        var refused = 0
        for k in 0..<n {
            for j in 0..<n where j != k {
                let decoded = try ListOperation.decode(updates[j], maxValueSize: ListDocument.defaultMaxValueSize, maxOperations: Int.max)
                refused += docs[k].receive(decoded).refused.count
            }
        }
        let t2 = nowNs()
        if states.isEmpty {
            memory = (Memory.rssNow() - before) / n
            firstBuildMs = buildMs
        }
        let shown = kanbanState(docs[0])
        states.append(shown)
        for d in docs.dropFirst() where kanbanState(d) != shown { refused += 1_000_000 }  // not converged
        return Run(ms: Double(t2 - t0) / 1e6, makeMs: Double(t1 - t0) / 1e6, mergeMs: Double(t2 - t1) / 1e6,
                   docs: docs, bytes: updates.reduce(0) { $0 + $1.count }, refused: refused)
    }
    let best = r.best
    let doc = best.docs[0]

    // Bytes and loads (untimed apart from the loads themselves, best of up to 5 each).
    let history = doc.encodedHistory()
    let snapshot = doc.encodedSnapshot()
    let lh = try Repeat.bestMs(reps: Repeat.loads) { () throws -> (Double, Int) in
        let (ms, d) = try loadHistory(history)
        return (ms, d.totalItemCount)
    }
    /// Best of up to 5 loads of a snapshot, each into a fresh document (its item count read).
    func snapshotLoad(_ bytes: [UInt8]) throws -> (ms: Double, state: Int, runs: Int) {
        try Repeat.bestMs(reps: Repeat.loads) { () throws -> (Double, Int) in
            let t0 = nowNs()
            let d = try ListDocument(snapshot: bytes, replica: ReplicaID(99))
            let count = d.totalItemCount
            return (Double(nowNs() - t0) / 1e6, count)
        }
    }
    let ls = try snapshotLoad(snapshot)
    // The same load, then every card's fields read (``ListDocument/snapshot()``): a state
    // snapshot's load replays a record on first use (Records/DeferredRecords.swift), so this is
    // what showing the whole board costs.
    let lr = try Repeat.bestMs(reps: Repeat.loads) { () throws -> (Double, Int) in
        let t0 = nowNs()
        let d = try ListDocument(snapshot: snapshot, replica: ReplicaID(99))
        let shown = d.snapshot()
        return (Double(nowNs() - t0) / 1e6, shown.sections.count)
    }
    let loaded = try ListDocument(snapshot: snapshot, replica: ReplicaID(99))
    // Memory of a device that opened the board: three replicas loaded from the snapshot, every
    // card read once (a state snapshot's load keeps the history's field writes as bytes and builds
    // records on first use), kept alive together; the RSS grown, the allocator's free pages given
    // back before each reading, / 3.
    let heldBefore = Memory.trimmedRSS()
    var held: [ListDocument] = []
    for k in 0 ..< 3 {
        let d = try ListDocument(snapshot: snapshot, replica: ReplicaID(200 + UInt64(k)))
        guard d.snapshot().sections.count == script.sections else { throw BenchError("a loaded board lost a section") }
        held.append(d)
    }
    let loadedMemory = (Memory.trimmedRSS() - heldBefore) / held.count
    // Every replica holds every operation after the merge: compacted at that version, the snapshot
    // keeps the records folded (format 4) instead of the field writes.
    var compacted = doc
    try compacted.compact(stable: compacted.version)
    let small = compacted.encodedSnapshot()
    let lc = try snapshotLoad(small)
    let fromSmall = try ListDocument(snapshot: small, replica: ReplicaID(99))
    let loadedSame = kanbanState(loaded) == kanbanState(doc) && kanbanState(fromSmall) == kanbanState(doc)

    // The checks: every replica the same in every run, every card nobody deleted exactly once, no
    // increment lost.
    let shown = states[0]
    let seen = shown.flatMap { $0.map(\.card) }
    var counts: [Int: Int] = [:]
    for k in seen { counts[k, default: 0] += 1 }
    let duplicates = counts.values.reduce(0) { $0 + max(0, $1 - 1) }
    let lost = script.live.filter { counts[$0] == nil }.count
    // A card one replica deletes while another moves it stays where it went (a move concurrent
    // with a delete keeps the item: Docs/Semantics.md); any other deleted card back is resurrected.
    let back = counts.keys.filter { !script.live.contains($0) }
    let kept = back.filter { !script.movedBy[$0, default: []].subtracting(script.deletedBy[$0, default: []]).isEmpty }.count
    let resurrected = back.count - kept
    let votesExpected = counts.keys.reduce(0) { $0 + script.votes[$1, default: 0] }
    let votes = shown.joined().reduce(0) { t, c in
        if case let .counter(v)? = c.fields["votes"] { return t + Int(v) }
        return t
    }
    let converged = best.refused == 0 && states.allSatisfy { $0 == shown }
    let once = duplicates == 0 && lost == 0 && resurrected == 0

    var res = BenchResult(workload: "W14.kanban", ops: ops)
    res.set("ms", best.ms)
    res.set("make_ms", best.makeMs)
    res.set("merge_ms", best.mergeMs)
    res.set("ns_per_op", best.ms * 1e6 / Double(ops))
    res.set("build_ms", firstBuildMs)
    res.set("exchange_bytes", best.bytes)
    res.set("history_bytes", history.count)
    res.set("snapshot_bytes", snapshot.count)
    res.set("load_history_ms", lh.ms)
    res.set("load_snapshot_ms", ls.ms)
    res.set("load_snapshot_read_ms", lr.ms)
    res.set("compacted_snapshot_bytes", small.count)
    res.set("load_compacted_snapshot_ms", lc.ms)
    res.set("memory_bytes", memory)
    res.set("loaded_memory_bytes", loadedMemory)
    // One loaded and read replica's tables (ListDocument.memoryBreakdown: capacity × stride).
    for part in held[0].memoryBreakdown where part.bytes >= 100_000 { res.set("loaded_tables.\(part.name)", part.bytes) }
    res.set("cards_expected", script.live.count)
    res.set("cards_after_merge", seen.count)
    res.set("duplicate_cards", duplicates)
    res.set("lost_cards", lost)
    res.set("kept_moved_deleted", kept)
    res.set("resurrected_cards", resurrected)
    res.set("every_card_once", once ? 1 : 0)
    res.set("votes_expected", votesExpected)
    res.set("votes_after_merge", votes)
    res.ok = converged && once && votes == votesExpected && loadedSame
    res.note = "\(script.cards.count) cards x 6 fields in \(script.sections) sections, \(n) replicas x "
        + "\(script.replicas.map { String($0.count) }.joined(separator: "/")) operations from \(path); "
        + "timed: every replica's operations (moveItem / writeFields / deleteItem, one call each; a field write "
        + "looks up the row's ItemID) + merge (each replica's operations(since: fork) encoded once, decoded and "
        + "received by each other replica); ms \(Repeat.note(Repeat.moveRuns, r.runs)) on fresh replicas; "
        + "converged=\(converged), every card once=\(once) (\(kept) deleted cards kept by a concurrent move), "
        + "votes \(votes) of \(votesExpected), "
        + "snapshot loads same=\(loadedSame); history = encodedHistory(), snapshot = encodedSnapshot() (state), "
        + "compacted_snapshot = the same after compact(stable: version) (every replica holds every operation); "
        + "load_history_ms \(Repeat.note(Repeat.loads, lh.runs, "loads")), load_snapshot_ms "
        + "\(Repeat.note(Repeat.loads, ls.runs, "loads")); memory_bytes = RSS delta of the first run "
        + "(three replicas after the merge, the updates included) / \(n); loaded_memory_bytes = trimmed RSS growth "
        + "of three replicas each loaded from the snapshot with every card read, kept alive together, / 3"
    return res
}
