import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListSyncHTTP
import ListTable

/// The page's API (Docs/Web.md, "The page's API"): each call goes through the session's
/// ``WebBackend``, so the daemon decides what the session may do. State-changing calls are
/// `POST`s without a body (arguments in the query), checked for CSRF before they get here.
enum WebAPI {
    /// `GET /api/docs`: the documents the session may see, with their bytes on disk (their folder,
    /// and their records in the daemon's shared log not yet in a snapshot) and when they were last
    /// written (the newer of the two).
    ///
    /// - Complexity: O(d · f): a `stat` of each file of each document.
    static func documents(_ backend: WebBackend, dataFolder: String,
                          logUsage: (@Sendable (DocumentID) -> (logBytes: Int64, lastWriteMillis: UInt64?)?)? = nil) async -> HTTPResponse {
        do {
            let docs = try await backend.daemon().documents()
            let list: [[String: Any]] = docs.sorted { $0.name < $1.name }.map { d in
                var (bytes, changed) = usage(dataFolder + "/documents/" + d.id.description)
                if let inLog = logUsage?(d.id) {
                    bytes += Int(inLog.logBytes)
                    changed = max(changed, Int(inLog.lastWriteMillis ?? 0))
                }
                // Operations are known for documents in memory (epoch 0: not loaded now).
                return ["id": d.id.description, "name": d.name, "bytes": bytes, "changed": changed,
                        "operations": d.epoch == 0 ? NSNull() : d.operations as Any]
            }
            return WebPages.json(200, ["documents": list, "operator": backend.session.claims == nil,
                                       "readOnly": backend.session.claims?.readOnly ?? false])
        } catch { return failure(error) }
    }

    /// Bytes in a document's folder and the newest modification time (ms since 1970).
    static func usage(_ folder: String) -> (Int, Int) {
        let fm = FileManager.default
        var bytes = 0, changed = 0.0
        for f in (try? fm.contentsOfDirectory(atPath: folder)) ?? [] {
            guard let a = try? fm.attributesOfItem(atPath: folder + "/" + f) else { continue }
            bytes += (a[.size] as? NSNumber)?.intValue ?? 0
            changed = max(changed, (a[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)
        }
        return (bytes, Int(changed * 1000))
    }

    /// `POST /api/docs?name=N[&sections=A,B]`: creates a document.
    static func create(_ backend: WebBackend, _ request: HTTPRequest) async -> HTTPResponse {
        guard let name = WebRequestCheck.parameter("name", in: request.query), !name.isEmpty, name.utf8.count <= 200 else {
            return WebPages.json(400, ["error": "a document needs a name of 1 to 200 bytes"])
        }
        let sections = WebRequestCheck.parameter("sections", in: request.query)
            .map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) } ?? [""]
        do {
            let id = try await backend.daemon().create(name: name, sections: sections)
            return WebPages.json(200, ["id": id.description])
        } catch { return failure(error) }
    }

    /// `POST /api/docs/ID/destroy`: destroys the document (the daemon's key only).
    static func destroy(_ backend: WebBackend, _ id: DocumentID) async -> HTTPResponse {
        do {
            _ = try await backend.daemon().destroy(id)
            return WebPages.json(200, ["destroyed": id.description])
        } catch { return failure(error) }
    }

    /// `POST /api/docs/ID/rename?name=N`: renames the document (the daemon decides whether the
    /// session's credential may: read-only or out of scope is refused). Answers `{"id", "name"}`.
    static func rename(_ backend: WebBackend, _ id: DocumentID, _ request: HTTPRequest) async -> HTTPResponse {
        guard let name = WebRequestCheck.parameter("name", in: request.query), !name.isEmpty, name.utf8.count <= 200 else {
            return WebPages.json(400, ["error": "a document needs a name of 1 to 200 bytes"])
        }
        do {
            let info = try await backend.daemon().rename(id, to: name)
            return WebPages.json(200, ["id": info.id.description, "name": info.name])
        } catch { return failure(error) }
    }

    /// `GET /api/status`: the daemon's status object (the daemon's key only).
    static func status(_ backend: WebBackend) async -> HTTPResponse {
        do {
            let text = try await backend.daemon().status()
            return HTTPResponse(status: 200, text: text, contentType: "application/json", headers: [("Cache-Control", "no-store")])
        } catch { return failure(error) }
    }

    /// `GET /api/docs/ID/events`: server-sent events: `state` (the whole list, at once and after
    /// every change), `presence` (the others' drags), `ended` (the daemon closed the session's
    /// connection: a revoked credential, a stop), and a comment every 15 s.
    static func events(_ backend: WebBackend, _ id: DocumentID) async -> HTTPResponse {
        let client: DaemonClient, live: LiveDocument
        do { (client, live) = try await backend.document(id) } catch { return failure(error) }
        let name = await client.info(id)?.name ?? ""
        // Taking part (idle) makes the daemon relay the others' drags to this session.
        try? await client.publishPresence(id, .idle, as: backend.displayName)
        let stream = HTTPStream()
        let changes = live.changes(), presence = live.presenceChanges()
        let state: @Sendable () -> [UInt8] = {
            // The snapshot and its operation count from one copy of the document.
            let doc = live.document
            return ServerSentEvent(event: "state", data: WebModel.stateJSON(id: id, name: name, snapshot: doc.snapshot(),
                                                                            operations: doc.operationCount)).bytes
        }
        stream.send(state())
        stream.send(ServerSentEvent(event: "presence", data: WebModel.presenceJSON(live.remoteActivities, snapshot: live.snapshot)).bytes)
        let key = ObjectIdentifier(stream)
        let open = await backend.register(key) { why, final in
            if final { stream.send(ServerSentEvent(event: "ended", data: why).bytes) }
            stream.finish()
        }
        guard open else { return HTTPResponse(headers: eventHeaders, stream: stream) }
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                // Changes wake the sender; wake-ups that come while it sends collapse into one,
                // so a burst of changes costs one state per send, not one per change.
                let (wake, poke) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
                group.addTask {
                    for await _ in changes { poke.yield() }
                    poke.finish()
                }
                group.addTask {
                    for await _ in wake { guard stream.send(state()) else { return } }
                }
                group.addTask {
                    for await activities in presence {
                        let data = WebModel.presenceJSON(activities, snapshot: live.snapshot)
                        guard stream.send(ServerSentEvent(event: "presence", data: data).bytes) else { return }
                    }
                }
                group.addTask {
                    while !Task.isCancelled, stream.send(ServerSentEvent.comment("keep-alive")) {
                        try? await Task.sleep(for: .seconds(15))
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
        stream.onClose {
            task.cancel()
            Task { await backend.unregister(key) }
        }
        return HTTPResponse(headers: eventHeaders, stream: stream)
    }

    static let eventHeaders: [(name: String, value: String)] = [("Content-Type", "text/event-stream; charset=utf-8"),
                                                                ("Cache-Control", "no-store")]

    /// `POST /api/docs/ID/move?item=I&section=S[&after=A][&before=B]`: one move, by identity
    /// (``WebModel/destination(of:at:in:)``), made against the document as it is now.
    static func move(_ backend: WebBackend, _ id: DocumentID, _ request: HTTPRequest) async -> HTTPResponse {
        guard let item = itemParameter("item", request), let place = place(request) else {
            return WebPages.json(400, ["error": "a move names item, section and optionally after and before (ids as the page has them)"])
        }
        do {
            let (client, _) = try await backend.document(id)
            let moved = try await client.edit(id) { (doc: inout ListDocument) throws(ListError) -> Bool in
                let snapshot = doc.snapshot()
                guard let to = WebModel.destination(of: item, at: place, in: snapshot) else {
                    if snapshot.indexPath(of: item) == nil { throw ListError.unknownItem(item) }
                    throw ListError.unknownSection(place.section)
                }
                return try doc.moveItem(item, to: to) != nil
            }
            return WebPages.json(200, ["moved": moved])
        } catch { return failure(error) }
    }

    /// `POST /api/docs/ID/insert?section=S&text=T`: an item at the end of a section.
    static func insert(_ backend: WebBackend, _ id: DocumentID, _ request: HTTPRequest) async -> HTTPResponse {
        guard let section = WebRequestCheck.parameter("section", in: request.query).flatMap(WebModel.opID).map(SectionID.init),
              let text = WebRequestCheck.parameter("text", in: request.query) else {
            return WebPages.json(400, ["error": "an insert names section and text"])
        }
        do {
            let (client, _) = try await backend.document(id)
            try await client.edit(id) { (doc: inout ListDocument) throws(ListError) -> Void in
                guard let s = doc.index(of: section) else { throw ListError.unknownSection(section) }
                try doc.insertItem(at: IndexPath(item: try doc.itemCount(inSection: s), section: s), value: Data(text.utf8))
            }
            return WebPages.json(200, ["inserted": true])
        } catch { return failure(error) }
    }

    /// `POST /api/docs/ID/presence?item=I&section=S&after=A&before=B` while a drag is in
    /// progress, `POST /api/docs/ID/presence` (no item) when it ends.
    /// `POST /api/docs/ID/presence?item=I&field=N&start=S&end=E` says where the caret is in a
    /// text field (`WebAPI+Text.swift`).
    static func presence(_ backend: WebBackend, _ id: DocumentID, _ request: HTTPRequest) async -> HTTPResponse {
        do {
            let (client, live) = try await backend.document(id)
            let activity: PresenceActivity
            if WebRequestCheck.parameter("field", in: request.query) != nil {
                guard let caret = caretActivity(request, in: live.document) else {
                    return WebPages.json(400, ["error": "a caret names an item or a section, a text field of it and a range within its text"])
                }
                activity = caret
            } else if let item = itemParameter("item", request) {
                guard let place = place(request) else { return WebPages.json(400, ["error": "a drag names its section"]) }
                activity = .dragging(items: [item], to: place)
            } else {
                activity = .idle
            }
            try await client.publishPresence(id, activity, as: backend.displayName)
            return WebPages.json(200, ["ok": true])
        } catch { return failure(error) }
    }

    static func itemParameter(_ name: String, _ request: HTTPRequest) -> ItemID? {
        WebRequestCheck.parameter(name, in: request.query).flatMap(WebModel.opID).map(ItemID.init)
    }

    /// The record a field edit names: `item=I`, or `section=S` (sections have fields as items do).
    static func targetParameter(_ request: HTTPRequest) -> RecordTarget? {
        if let item = itemParameter("item", request) { return .item(item) }
        return WebRequestCheck.parameter("section", in: request.query).flatMap(WebModel.opID).map { .section(SectionID($0)) }
    }

    /// The landing place in the query: `section`, and `after` / `before` when given.
    static func place(_ request: HTTPRequest) -> PresencePlace? {
        guard let s = WebRequestCheck.parameter("section", in: request.query).flatMap(WebModel.opID) else { return nil }
        let after = WebRequestCheck.parameter("after", in: request.query).flatMap { $0.isEmpty ? nil : $0 }
        let before = WebRequestCheck.parameter("before", in: request.query).flatMap { $0.isEmpty ? nil : $0 }
        guard after.map({ WebModel.opID($0) != nil }) ?? true, before.map({ WebModel.opID($0) != nil }) ?? true else { return nil }
        return PresencePlace(section: SectionID(s), after: after.flatMap(WebModel.opID).map(ItemID.init),
                             before: before.flatMap(WebModel.opID).map(ItemID.init))
    }

    /// A failure as the page reads it: `{"error": text}` with a status that says whose fault.
    static func failure(_ error: any Error) -> HTTPResponse {
        switch error {
        case let e as DaemonClientError:
            switch e {
            case let .refused(code, _):
                switch code {
                case .forbidden, .revoked, .expired: return WebPages.json(403, ["error": e.description])
                case .unknownDocument, .destroyed: return WebPages.json(404, ["error": e.description])
                default: return WebPages.json(409, ["error": e.description])
                }
            default: return WebPages.json(502, ["error": e.description])
            }
        case let e as ListError: return WebPages.json(409, ["error": e.description])
        default: return WebPages.json(500, ["error": "\(error)"])
        }
    }
}
