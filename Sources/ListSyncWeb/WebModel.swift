import Foundation
import ListCRDT
import ListTable

/// What the web view's page and its server say to each other about a document (Docs/Web.md,
/// "The page's API"): ids as text, the list as JSON, and where a dropped row lands. No I/O.
public enum WebModel {
    /// An operation id as the page names it: `counter-replica`, both decimal (text, since a
    /// replica id does not fit a JavaScript number).
    public static func text(_ id: OpID) -> String { "\(id.counter)-\(id.replica.rawValue)" }

    /// Parses ``text(_:)``; nil for anything else.
    public static func opID(_ text: String) -> OpID? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let c = UInt64(parts[0]), let r = UInt64(parts[1]) else { return nil }
        return OpID(counter: c, replica: ReplicaID(r))
    }

    /// The document as the page draws it: `{"id", "name", "sections": [{"id", "text", "items":
    /// [{"id", "text"}]}]}`; values as UTF-8 text (invalid bytes replaced).
    ///
    /// - Complexity: O(n) in the size of the document.
    public static func stateJSON(id: DocumentID, name: String, snapshot: ListSnapshot) -> String {
        let object: [String: Any] = [
            "id": id.description, "name": name,
            "sections": snapshot.sections.map { s in
                ["id": text(s.id.opID), "text": String(decoding: s.value, as: UTF8.self),
                 "items": s.items.map { ["id": text($0.id.opID), "text": String(decoding: $0.value, as: UTF8.self)] }] as [String: Any]
            },
        ]
        return json(object)
    }

    /// The others' activities as the page shows them: `[{"name", "kind", "items": [ids],
    /// "to": {"section", "row"} or null}]`.
    ///
    /// - Complexity: O(k) in the items named.
    public static func presenceJSON(_ activities: [RemoteActivity], snapshot: ListSnapshot) -> String {
        let list: [[String: Any]] = activities.map { a in
            var to: Any = NSNull()
            if let d = a.destination, d.section < snapshot.sections.count {
                to = ["section": text(snapshot.sections[d.section].id.opID), "row": d.item] as [String: Any]
            }
            return ["name": a.name, "kind": a.kind == .dragging ? "dragging" : "selecting",
                    "items": a.items.map { text($0.opID) }, "to": to]
        }
        return json(list)
    }

    /// Where `item` lands when dropped at `place`, found by identity in `snapshot` as it is when
    /// the move is made (others may have moved rows since the page drew them): right below
    /// `place.after` if it is still in the section, else right above `place.before`, else at the
    /// top when the drop was at the top, else at the end (a neighbour that is `item` itself counts
    /// as none). The index path is `moveItem`'s
    /// destination (the row's place after the move, counted without it). Nil when the item or
    /// the section is gone.
    ///
    /// - Complexity: O(n) in the rows of the section.
    public static func destination(of item: ItemID, at place: PresencePlace, in snapshot: ListSnapshot) -> IndexPath? {
        guard snapshot.indexPath(of: item) != nil, let s = snapshot.indexOfSection(place.section) else { return nil }
        let rows = snapshot.sections[s].items.map(\.id).filter { $0 != item }
        // A neighbour that is the dragged row itself names no place: as if none were named.
        let after = place.after == item ? nil : place.after, before = place.before == item ? nil : place.before
        let row: Int
        if let after, let i = rows.firstIndex(of: after) {
            row = i + 1
        } else if let before, let i = rows.firstIndex(of: before) {
            row = i
        } else if after == nil {
            row = 0
        } else {
            row = rows.count
        }
        assert(row >= 0 && row <= rows.count)
        return IndexPath(item: row, section: s)
    }

    static func json(_ object: Any) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("null".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
