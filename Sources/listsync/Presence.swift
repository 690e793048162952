import Foundation
import ListCRDT
import ListTable

/// What `watch` prints about the others' presence: one entry per replica whose activity is new,
/// changed (a hover, or rows that moved under it) or ended since `before`, as a text line
/// (`presence: phone drags "milk" to 1.0`) and as a JSON object.
func describePresence(_ activities: [RemoteActivity], since before: [ReplicaID: RemoteActivity],
                      _ snapshot: ListSnapshot) -> [(text: String, json: [String: Any])] {
    var out: [(text: String, json: [String: Any])] = []
    let now = Dictionary(activities.map { ($0.replica, $0) }, uniquingKeysWith: { a, _ in a })
    for a in activities where before[a.replica] != a {
        out.append(presenceEntry(a, snapshot))
    }
    for (replica, gone) in before.sorted(by: { $0.key < $1.key }) where now[replica] == nil {
        out.append(("presence: \(shown(gone.name)) ended",
                    ["presence": ["replica": "\(replica)", "name": gone.name, "activity": "ended"] as [String: Any]]))
    }
    return out
}

private func presenceEntry(_ a: RemoteActivity, _ snapshot: ListSnapshot) -> (text: String, json: [String: Any]) {
    func value(_ p: IndexPath) -> Data? { snapshot.item(at: p)?.value }
    let quoted = zip(a.items, a.indexPaths).map { "\"" + (value($1).map(shown) ?? "") + "\"" }
    let what: String
    switch a.items.count {
    case 0: what = "rows not shown here"
    case 1: what = quoted[0]
    default: what = "\(quoted[0]) and \(a.items.count - 1) more"
    }
    let to = a.destination.map { "\($0.section).\($0.item)" }
    let line: String
    switch a.kind {
    case .dragging: line = "presence: \(shown(a.name)) drags \(what) to \(to ?? "a section not shown here")"
    case .selecting: line = "presence: \(shown(a.name)) selects \(quoted.isEmpty ? "nothing shown here" : quoted.joined(separator: ", "))"
    case .editing:
        let place = a.caret.map { c in
            c.range.isEmpty ? "at \(c.head)" : "selecting \(c.range.lowerBound)..<\(c.range.upperBound)"
        } ?? "(a text not shown here)"
        line = "presence: \(shown(a.name)) edits \(a.caret.map { "field \(shown($0.field))" } ?? "a field") of \(quoted.first ?? "a section") \(place)"
    }
    let items: [[String: Any]] = zip(a.items, a.indexPaths).map { id, p in
        ["id": "\(id)", "path": "\(p.section).\(p.item)", "text": value(p).map(text) ?? ""]
    }
    var json: [String: Any] = ["replica": "\(a.replica)", "name": a.name, "items": items,
                               "activity": a.kind == .dragging ? "dragging" : a.kind == .editing ? "editing" : "selecting"]
    if a.kind == .dragging { json["to"] = to ?? NSNull() }
    if a.kind == .editing {
        json["caret"] = a.caret.map { ["field": $0.field, "anchor": $0.anchor, "head": $0.head] as [String: Any] } ?? NSNull()
    }
    return (line, ["presence": json])
}
