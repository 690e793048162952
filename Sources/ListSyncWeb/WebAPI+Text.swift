import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListSyncHTTP

// Live typing in a text field from the page (Docs/Web.md, "Typing together"): each keystroke is
// sent as a splice against the text the page showed when it was typed; the daemon's copy may have
// moved on since (others' typing, or the page's own earlier keystrokes not yet drawn back), so the
// splice is carried through what changed before it is made. Positions from the page are UTF-16
// offsets, as a browser counts them.
extension WebAPI {
    /// `POST /api/docs/ID/text?item=I&name=N&base=B&at=A&delete=D&insert=S` (or `section=S` for
    /// a section's text field instead of `item`): replaces `delete`
    /// UTF-16 units at `at` of `base` (the text the page showed) by `insert`, in the text as it is
    /// now. Answers `{"text": …, "operations": n}`: the text after the splice, and the document's
    /// operation count then (a `state` event with a smaller count is older than this answer).
    static func text(_ backend: WebBackend, _ id: DocumentID, _ request: HTTPRequest) async -> HTTPResponse {
        guard let target = targetParameter(request), let name = WebRequestCheck.parameter("name", in: request.query),
              let at = WebRequestCheck.parameter("at", in: request.query).flatMap({ Int($0) }),
              let delete = WebRequestCheck.parameter("delete", in: request.query).flatMap({ Int($0) }) else {
            return WebPages.json(400, ["error": "a text splice names an item or a section, name, at and delete"])
        }
        let base = WebRequestCheck.parameter("base", in: request.query) ?? ""
        let insert = WebRequestCheck.parameter("insert", in: request.query) ?? ""
        guard at >= 0, delete >= 0, let splice = TextPositions.splice(replacing: NSRange(location: at, length: delete), in: base, with: insert) else {
            return WebPages.json(400, ["error": "the range \(at)+\(delete) is not within the text the page showed"])
        }
        do {
            let (client, _) = try await backend.document(id)
            let (text, operations) = try await client.edit(id) { (doc: inout ListDocument) throws(ListError) -> (String, Int) in
                let current = doc.text(name, of: target) ?? ""
                let moved = rebased(splice, from: base, to: current)
                if moved.delete > 0 || !moved.insert.isEmpty {
                    // A keystroke: `edit` sends what the log gained, so the typing call that
                    // makes no operation value is enough (ListDocument.typeText).
                    try doc.typeText(name, of: target, at: moved.at, delete: moved.delete, insert: moved.insert)
                }
                return (doc.text(name, of: target) ?? "", doc.operationCount)
            }
            return WebPages.json(200, ["text": text, "operations": operations])
        } catch { return failure(error) }
    }

    /// `splice`, made against `base`, carried to `current`: its two ends moved through the changes
    /// from `base` to `current` (text typed at an end by others stays outside the splice).
    static func rebased(_ splice: TextSplice, from base: String, to current: String) -> TextSplice {
        guard base != current else { return splice }
        let changes = TextChanges.between(old: base, new: current)
        let start = TextChanges.position(splice.at, through: changes)
        let end = max(start, TextChanges.position(splice.at + splice.delete, through: changes))
        return TextSplice(at: start, delete: end - start, insert: splice.insert)
    }

    /// The caret presence of `POST /api/docs/ID/presence?item=I&field=N&base=B&start=S&end=E`
    /// (`section=S` instead of `item` in a section's text field):
    /// UTF-16 offsets of `base`, the text the page showed, carried to the field's text as the
    /// daemon's copy holds it now; nil when the query names no text field or a range outside `base`.
    static func caretActivity(_ request: HTTPRequest, in doc: ListDocument) -> PresenceActivity? {
        guard let target = targetParameter(request), let field = WebRequestCheck.parameter("field", in: request.query),
              let start = WebRequestCheck.parameter("start", in: request.query).flatMap({ Int($0) }),
              let end = WebRequestCheck.parameter("end", in: request.query).flatMap({ Int($0) }),
              let text = doc.text(field, of: target) else { return nil }
        let base = WebRequestCheck.parameter("base", in: request.query) ?? text
        guard let s = TextPositions.scalarOffset(ofUTF16: start, in: base),
              let e = TextPositions.scalarOffset(ofUTF16: end, in: base) else { return nil }
        let changes = base == text ? [] : TextChanges.between(old: base, new: text)
        let (a, h) = (TextChanges.position(s, through: changes), TextChanges.position(e, through: changes))
        guard let caret = doc.caret(field, of: target, selection: min(a, h) ..< max(a, h), headFirst: h < a) else { return nil }
        return .editing(caret)
    }
}
