import Foundation
@_spi(Testing) import ListCRDT
import ListSyncRandom

// W17.notes (issue 45): a board of 5,000 cards with 2 KB of notes each, each card's notes typed
// into its text field as one paste. What a board of long cards costs to store and to open: history
// and snapshot bytes, the snapshot's load time and the memory of a replica holding it. The same
// board in Loro and Yrs: `Benchmarks/compare/notes.py`.

/// The cards, and the bytes of each one's notes.
let notesCards = 5_000, notesBytes = 2_048

/// Card `k`'s notes: words drawn by SplitMix64 (seed 17 000 + k) until `notesBytes` bytes, ASCII
/// (`notes.py` makes the same text).
func notesText(_ k: Int) -> String {
    let words = ["milk", "eggs", "call", "Ana", "about", "the", "release", "notes", "before", "Friday", "check",
                 "budget", "and", "ship", "it", "design", "review", "fix", "crash", "on", "launch"]
    var rng = SplitMix64(seed: 17_000 + UInt64(k))
    var out = ""
    out.reserveCapacity(notesBytes)
    while out.utf8.count < notesBytes {
        if !out.isEmpty { out += " " }
        out += words[Int(rng.next() % UInt64(words.count))]
    }
    return String(out.prefix(notesBytes))
}

func w17Notes(_ ctx: Context) throws -> BenchResult {
    let texts = (0 ..< notesCards).map(notesText)   // untimed
    var doc = ListDocument(replica: ReplicaID(1))
    let t0 = nowNs()
    try doc.insertSection(at: 0)
    var ids: [ItemID] = []
    ids.reserveCapacity(notesCards)
    for k in 0 ..< notesCards {
        let id = ItemID(try doc.insertItem(atRow: k, inSection: 0, value: Data("card \(k)".utf8)).id)
        try doc.splice("notes", ofItem: id, at: 0, insert: texts[k])
        ids.append(id)
    }
    let buildMs = Double(nowNs() - t0) / 1e6
    let history = doc.encodedHistory()
    let snapshot = doc.encodedSnapshot(format: .state)
    func sameNotes(_ d: ListDocument) -> Bool {
        d.totalItemCount == notesCards && [0, notesCards / 2, notesCards - 1].allSatisfy { d.text("notes", ofItem: ids[$0]) == texts[$0] }
    }
    let ls = try Repeat.bestMs(reps: Repeat.loads) { () throws -> (Double, Bool) in
        let t = nowNs()
        let d = try ListDocument(snapshot: snapshot, replica: ReplicaID(99))
        let ms = Double(nowNs() - t) / 1e6
        return (ms, sameNotes(d))
    }
    let lh = try Repeat.bestMs(reps: Repeat.loads) { () throws -> (Double, Bool) in
        let (ms, d) = try loadHistory(history)
        return (ms, sameNotes(d))
    }
    // Memory of a replica holding the board: the RSS grown by three replicas loaded from the
    // snapshot, kept alive together, divided by three.
    let before = Memory.rssNow()
    let replicas = try (0 ..< 3).map { try ListDocument(snapshot: snapshot, replica: ReplicaID(100 + UInt64($0))) }
    let memory = (Memory.rssNow() - before) / replicas.count
    // The same with the allocator's free pages given back before each reading (what the replicas
    // hold, not what their loads freed).
    let trimmedBefore = Memory.trimmedRSS()
    let more = try (0 ..< 3).map { try ListDocument(snapshot: snapshot, replica: ReplicaID(200 + UInt64($0))) }
    let trimmed = (Memory.trimmedRSS() - trimmedBefore) / more.count
    var res = BenchResult(workload: "W17.notes", ops: notesCards * 2)
    res.set("build_ms", buildMs)
    res.set("history_bytes", history.count)
    res.set("snapshot_bytes", snapshot.count)
    res.set("load_snapshot_ms", ls.ms)
    res.set("load_history_ms", lh.ms)
    res.set("memory_bytes", memory)
    res.set("trimmed_memory_bytes", trimmed)
    res.set("text_bytes", texts.reduce(0) { $0 + $1.utf8.count })
    // One loaded replica's tables (ListDocument.memoryBreakdown: capacity × stride, no allocator slack).
    for part in replicas[0].memoryBreakdown where part.bytes >= 100_000 { res.set("tables.\(part.name)", part.bytes) }
    res.ok = ls.state && lh.state && replicas.allSatisfy(sameNotes)
    res.note = "\(notesCards) cards in one section, each with a 2 KB notes text field typed as one splice; "
        + "load_snapshot_ms (state snapshot) \(Repeat.note(Repeat.loads, ls.runs, "loads")), load_history_ms "
        + "\(Repeat.note(Repeat.loads, lh.runs, "loads")); memory_bytes = RSS growth of three replicas loaded "
        + "from the snapshot / 3; trimmed_memory_bytes = the same for three more, with glibc malloc_trim(0) before each reading"
    return res
}
