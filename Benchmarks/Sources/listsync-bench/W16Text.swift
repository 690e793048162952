import Foundation
import ListCRDT
import ListSyncTestSupport

// W16.text (issue 45): the automerge-paper trace typed into one card's `notes` text field, one
// splice per trace line through the typing API an app calls (`ListDocument.typeText`, which
// returns the operation's id, not the operation: `LiveDocument.edit` reads the operations made
// from the log), next to W1.trace's list path measured in the
// same run (each best of the same number of runs, on a fresh document each time).

/// One timed run of the whole trace as splices of one item's text field (`texts[k]`: the text of
/// `edits[k]` as a string, made once by the caller, so that `--toggle-collect='*textTraceOnce*'`
/// counts what is timed, as `*traceOnce*` does for W1). Returns (ns, doc).
func textTraceOnce(_ edits: [EditingTrace.Edit], _ texts: [String]) throws -> (UInt64, ListDocument, ItemID) {
    var doc = ListDocument(replica: ReplicaID(1))
    try doc.insertSection(at: 0)
    let item = ItemID(try doc.insertItem(atRow: 0, inSection: 0, value: Data()).id)
    let t0 = nowNs()
    for k in edits.indices {
        // The edit's position and count read in place (a copy of the edit would retain its
        // bytes, which W16 does not use: its text is `texts[k]`).
        try doc.typeText("notes", ofItem: item, at: edits[k].position, delete: edits[k].deleteCount, insert: texts[k])
    }
    return (nowNs() - t0, doc, item)
}

func w16Text(_ ctx: Context) throws -> BenchResult {
    let trace = try ctx.loadTrace()
    let edits = trace.edits
    let total = edits.count
    let texts = edits.map { String(decoding: $0.text, as: UTF8.self) }  // untimed: the trace's text as strings
    let text = try Repeat.bestOf { () throws -> (Double, [(String, Metric)], (ListDocument, ItemID)) in
        let (ns, doc, item) = try textTraceOnce(edits, texts)
        let perOp = Double(ns) / Double(total)
        return (perOp, [("ns_per_op", .double(perOp))], (doc, item))
    }
    let list = try Repeat.bestOf { () throws -> (Double, [(String, Metric)], ListDocument) in
        let (ns, doc, _) = try traceOnce(edits)
        let perOp = Double(ns) / Double(total)
        return (perOp, [("ns_per_op", .double(perOp))], doc)
    }
    var res = BenchResult(workload: "W16.text", metrics: text.metrics, ops: total)
    res.set("w1_list_ns_per_op", list.best)
    res.set("ratio_to_w1", text.best / list.best)
    let (doc, item) = text.state
    let got = Array((doc.text("notes", ofItem: item) ?? "").utf8)
    res.set("characters", got.count)
    let history = doc.encodedHistory(), snapshot = doc.encodedSnapshot(format: .state)
    res.set("history_bytes", history.count)
    res.set("state_snapshot_bytes", snapshot.count)
    res.set("snapshot_bytes", snapshot.count)  // the name peers.py's W16.text gives Loro's and Yrs's
    // Loads into a fresh document, the text read once (as peers.py reads Loro's and Yrs's). A
    // load that fails is reported in the note (and `ok` false), the other figures kept.
    func sameText(_ d: ListDocument) -> Bool { d.text("notes", ofItem: item)?.utf8.count == got.count }
    var failures: [String] = []
    var loadsOK = true
    do {
        let lh = try Repeat.bestMs(reps: Repeat.loads) { () throws -> (Double, Bool) in
            let t = nowNs()
            var d = ListDocument(replica: ReplicaID(99))
            let refused = try d.receive(encoded: history, maxOperations: Int.max).refused
            let same = sameText(d)
            return (Double(nowNs() - t) / 1e6, refused.isEmpty && same)
        }
        res.set("load_history_ms", lh.ms)
        loadsOK = loadsOK && lh.state
    } catch {
        failures.append("the history load failed: \(error)")
        loadsOK = false
    }
    do {
        let ls = try Repeat.bestMs(reps: Repeat.loads) { () throws -> (Double, Bool) in
            let t = nowNs()
            let d = try ListDocument(snapshot: snapshot, replica: ReplicaID(99))
            let same = sameText(d)
            return (Double(nowNs() - t) / 1e6, same)
        }
        res.set("load_snapshot_ms", ls.ms)
        loadsOK = loadsOK && ls.state
    } catch {
        failures.append("the state snapshot load failed: \(error)")
        loadsOK = false
    }
    res.ok = trace.finalText != nil && got == trace.finalText! && loadsOK
    res.note = "one typeText(_:ofItem:at:delete:insert:) per trace line into one item's text field; W1.trace's list path "
        + "(one insertItem/deleteItem per element) timed in the same run; " + Repeat.note(Repeat.runs, text.runs)
        + "; loads into a fresh document, the text read, best of up to \(Repeat.loads) (load_snapshot_ms: the state snapshot)"
        + failures.map { "; " + $0 }.joined()
    return res
}
