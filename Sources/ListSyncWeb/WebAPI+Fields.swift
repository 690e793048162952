import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListSyncHTTP

// Field edits from the page (Docs/Web.md, "Fields"): every kind of field, adding and removing
// one. The query is read by ``WebFieldEdit/parse(kind:_:)``; the edit is made against the
// document as the daemon has it when it is made, writing only the person's change.
extension WebAPI {
    /// `POST /api/docs/ID/field?item=I&name=N&kind=K[&value=V][&was=W][&by=B][&add=M][&remove=M][&new=1]`:
    /// edits field N of item I (by identity), or of section S with `section=S` instead of
    /// `item`, as ``WebFieldEdit`` reads K and the rest. With `new=1` the field is being added: a
    /// field of that name already there is refused (409). Answers `{"written", "operations"}`;
    /// 400 for a bad name or a value not of its kind, 409 when the item or section is gone or a
    /// text no longer reads W.
    static func field(_ backend: WebBackend, _ id: DocumentID, _ request: HTTPRequest) async -> HTTPResponse {
        guard let target = targetParameter(request), let name = WebRequestCheck.parameter("name", in: request.query),
              let kind = WebRequestCheck.parameter("kind", in: request.query) else {
            return WebPages.json(400, ["error": "a field edit names an item or a section, name, kind and value"])
        }
        if let problem = FieldLimits.problem(withName: name) { return WebPages.json(400, ["error": problem]) }
        let edit: WebFieldEdit
        do { edit = try WebFieldEdit.parse(kind: kind) { WebRequestCheck.parameter($0, in: request.query) } }
        catch { return WebPages.json(400, ["error": error.description]) }
        let isNew = WebRequestCheck.parameter("new", in: request.query) == "1"
        do {
            let (client, _) = try await backend.document(id)
            let (written, stale) = try await client.edit(id) { (doc: inout ListDocument) throws(ListError) -> (Int, Bool) in
                try edit.apply(to: &doc, field: name, of: target, isNew: isNew)
            }
            if stale { return WebPages.json(409, ["error": "the text of \(name) changed while it was edited: edit it again"]) }
            return WebPages.json(200, ["written": written > 0, "operations": written])
        } catch { return failure(error) }
    }
}
