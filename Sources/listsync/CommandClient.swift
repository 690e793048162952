import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncClient
import ListTable

/// What the client commands need of a client: the daemon's (``DaemonClient``, every edit
/// acknowledged by the daemon) or the device's (`--replica DIR`: ``SyncClient`` on a local copy,
/// every edit saved on this device, sent by `listsync sync`).
extension CommandClient {
    /// The document as its holder has it now (a device copy: the copy; online: fetched afresh
    /// rather than caught up from the command's kept copy).
    func openAsTheDaemonHasIt(_ id: DocumentID) async throws -> LiveDocument { try await open(id) }
}

protocol CommandClient: Sendable {
    func documents() async throws -> [DocumentInfo]
    func resolve(_ text: String) async throws -> DocumentInfo
    func open(_ id: DocumentID) async throws -> LiveDocument
    /// The document as its holder has it now, not caught up from a kept copy (export).
    func openAsTheDaemonHasIt(_ id: DocumentID) async throws -> LiveDocument
    func create(name: String, sections: [String]) async throws -> DocumentID
    /// Edits; returns the result and where the edit now is (for the text output and for JSON).
    func edit<R: Sendable>(_ id: DocumentID, _ body: @Sendable (inout ListDocument) throws(ListError) -> R) async throws -> (R, Saved)
    func upload(_ id: DocumentID, _ operations: [ListOperation]) async throws
    /// The replica id an imported document is loaded as (nil: a random one).
    var importReplica: ReplicaID? { get }
    /// Sends every operation of `document` (an imported list, loaded as ``importReplica``) to
    /// the empty document `id`, keeping one copy of it in memory.
    func adopt(_ id: DocumentID, _ document: ListDocument) async throws
    func status() async throws -> String
    /// Destroys the document (the daemon's copy; or, for a device copy, removes it from the
    /// device), and says what was done, in words and as JSON.
    func destroy(_ info: DocumentInfo) async throws -> (text: String, json: [String: Any])
    /// Renames the document on the daemon; returns its info with the new name.
    func renameDocument(_ info: DocumentInfo, to name: String) async throws -> DocumentInfo
}

/// Where an edit is when the command returns.
struct Saved: Sendable {
    var text: String
    /// Whether the daemon acknowledged the edit as durable (false: saved on this device only).
    var acknowledged: Bool
    /// Edits of this device waiting for the daemon (device copies only).
    var waiting: Int?

    var json: [String: Any] {
        var o: [String: Any] = ["acknowledged": acknowledged]
        if let waiting { o["savedOnDevice"] = true; o["waiting"] = waiting }
        return o
    }
}

/// The daemon's copy, edited online: every edit acknowledged as durable by the daemon. Edits are
/// made as this client's replica of `--data`'s `clients/` folder (``ClientReplica``), so commands
/// run one after another add one entry to a document's version vector, not one each. A document
/// is opened from the slot's kept copy (``ClientCache``) when there is one: the daemon sends only
/// what changed since the last command, and the copy is brought up to date for the next one.
struct OnlineClient: CommandClient {
    let daemon: DaemonClient
    /// The client's kept replica id; nil when none could be taken (a random id per command).
    let slot: ClientReplica?
    /// The slot's kept copies; nil without a slot (or when its folder could not be made).
    let cache: ClientCache?
    /// Whether kept copies follow the daemon's floor (``DaemonClient/open(_:replica:resuming:epoch:acknowledged:keepsCopy:)``);
    /// false against a daemon of an older build, which refuses it: copies are then only caught
    /// up, and `export` fetches the daemon's copy afresh.
    var followsFloors = true

    /// The kept copy holds history the daemon has collected since (it compacted while the copy
    /// was away, and the copy is past that floor): the copy is dropped and the command run again,
    /// fetching the daemon's copy afresh.
    struct CopyBehindFloor: Error {}

    /// Whether opened documents are kept copies that follow the daemon's floor.
    private var keepsCopy: Bool { cache != nil && followsFloors }

    /// The document could not be edited as the kept id (the daemon lacks an edit it may have
    /// sent): the command is run again as a fresh id.
    struct ReplicaBehind: Error {}

    func documents() async throws -> [DocumentInfo] { try await daemon.documents() }
    func resolve(_ text: String) async throws -> DocumentInfo { try await daemon.resolve(text) }
    func create(name: String, sections: [String]) async throws -> DocumentID { try await daemon.create(name: name, sections: sections) }
    func upload(_ id: DocumentID, _ operations: [ListOperation]) async throws {
        try await daemon.upload(id, operations)
        if let cache, let live = try? await daemon.open(id) { await cache.append(id, operations, current: live.document) }
    }
    func status() async throws -> String { try await daemon.status() }

    var importReplica: ReplicaID? { slot?.replica }

    /// The imported document becomes the opened copy (``DaemonClient/open(_:replica:resuming:epoch:acknowledged:keepsCopy:)``
    /// sends what the daemon lacks, a part at a time), so the list is held once; the slot's
    /// kept copy is then written from it as a snapshot.
    func adopt(_ id: DocumentID, _ document: ListDocument) async throws {
        if let slot, document.replica == slot.replica, document.version[slot.replica] > 0 {
            // Operations of the kept id (the list was exported by this slot) go out under the
            // new document: recorded first, as an edit's are, so an interrupted import is not
            // continued with the same counters.
            try slot.willSend(id, upTo: document.version[slot.replica])
        }
        let held = slot.flatMap { cache?.load(id, replica: $0.replica) }
        let live = try await daemon.open(id, replica: nil, resuming: document, epoch: 0, keepsCopy: false)
        guard let cache else { return }
        if held == nil, document.historyFloor == nil, let epoch = await daemon.info(id)?.epoch {
            await cache.update(id, to: live.document, from: nil, replaced: false, epoch: epoch)
        } else {
            // A list with a compaction floor is not what the daemon holds: no kept copy.
            cache.drop(id)
        }
    }

    func destroy(_ info: DocumentInfo) async throws -> (text: String, json: [String: Any]) {
        let epoch = try await daemon.destroy(info.id)
        cache?.drop(info.id)
        return ("destroyed \(shown(info.name)) (\(info.id)) on the daemon: its files are removed and its id is refused from now on",
                ["destroyed": true, "id": info.id.description, "name": info.name, "epoch": String(epoch, radix: 16)])
    }

    func renameDocument(_ info: DocumentInfo, to name: String) async throws -> DocumentInfo {
        try await daemon.rename(info.id, to: name)
    }

    /// The kept copy where it follows the daemon's floor (``open(_:)`` checks it holds the
    /// history the daemon holds, no more); otherwise fetched afresh as this slot's replica.
    func openAsTheDaemonHasIt(_ id: DocumentID) async throws -> LiveDocument {
        let opened = await daemon.info(id) != nil
        if keepsCopy || opened { return try await open(id) }
        return try await daemon.open(id, replica: slot?.replica, resuming: nil, epoch: 0)
    }

    func open(_ id: DocumentID) async throws -> LiveDocument {
        if await daemon.info(id) != nil { return try await daemon.open(id) }   // opened already
        let held = slot.flatMap { cache?.load(id, replica: $0.replica) }
        let live: LiveDocument
        do {
            // The kept copy holds only what a daemon sent or acknowledged (``ClientCache``).
            live = try await daemon.open(id, replica: slot?.replica, resuming: held?.document, epoch: held?.epoch ?? 0,
                                         acknowledged: held?.document.version ?? VersionVector(), keepsCopy: keepsCopy)
        } catch let DaemonClientError.refused(code, _) where held != nil && code == .epochMismatch {
            // Reset or restored since the copy was kept: it is dropped, and the list fetched afresh.
            cache?.drop(id)
            if let slot { _ = cache?.load(id, replica: slot.replica) }
            let live = try await daemon.open(id, replica: slot?.replica, resuming: nil, epoch: 0, keepsCopy: keepsCopy)
            return try await opened(live, id, held: nil)
        } catch let DaemonClientError.refused(code, text) where code == .destroyed || code == .unknownDocument {
            cache?.drop(id)
            throw DaemonClientError.refused(code, text)
        }
        return try await opened(live, id, held: held)
    }

    /// Checks that the kept id may edit `live`, and brings the kept copy up to it.
    private func opened(_ live: LiveDocument, _ id: DocumentID, held: (document: ListDocument, epoch: UInt64)?) async throws -> LiveDocument {
        if let slot, live.document.replica == slot.replica, !slot.mayReuse(in: id, version: live.document.version) {
            throw ReplicaBehind()
        }
        if keepsCopy, await daemon.followsFloor(id) == false {
            // Nothing was sent yet: the copy is dropped, and the command run again without it.
            cache?.drop(id)
            throw CopyBehindFloor()
        }
        if let cache, let epoch = await daemon.info(id)?.epoch {
            await cache.update(id, to: live.document, from: held?.document, replaced: await daemon.wasReplaced(id), epoch: epoch)
        }
        return live
    }

    func edit<R: Sendable>(_ id: DocumentID, _ body: @Sendable (inout ListDocument) throws(ListError) -> R) async throws -> (R, Saved) {
        let live = try await open(id)
        let made = try live.edit(body)
        if let last = made.operations.map(\.lastID.counter).max() {
            // Recorded before anything goes out: a later run knows this id may have sent it.
            if let slot, live.document.replica == slot.replica { try slot.willSend(id, upTo: last) }
            try await daemon.upload(id, made.operations)
            await cache?.append(id, made.operations, current: live.document)
        }
        return (made.result, Saved(text: "acknowledged: on the daemon's disk", acknowledged: true))
    }
}

/// The device's copy in a folder (`--replica DIR`), used without a daemon.
struct ReplicaClient: CommandClient {
    let client: SyncClient
    let folder: String

    func documents() async throws -> [DocumentInfo] {
        var list: [DocumentInfo] = []
        for (id, name) in try await client.documents() {
            let live = try await client.open(id)
            list.append(DocumentInfo(id: id, name: name, epoch: await client.info(id)?.epoch ?? 0, operations: live.document.operationCount))
        }
        return list
    }

    func resolve(_ text: String) async throws -> DocumentInfo {
        let list = try await client.documents().map { DocumentInfo(id: $0.id, name: $0.name, epoch: 0, operations: 0) }
        do {
            return try DocumentInfo.resolve(text, in: list)
        } catch {
            throw UsageError(message: "\(error) on this device (\(folder)); `listsync sync --replica \(folder) DOC` fetches a document from the daemon")
        }
    }

    func open(_ id: DocumentID) async throws -> LiveDocument { try await client.open(id) }

    func create(name: String, sections: [String]) async throws -> DocumentID {
        try await client.create(name: name, sections: sections)
    }

    func edit<R: Sendable>(_ id: DocumentID, _ body: @Sendable (inout ListDocument) throws(ListError) -> R) async throws -> (R, Saved) {
        _ = try await client.open(id)
        let r = try await client.edit(id, body).result
        let waiting = await client.status.waiting
        return (r, Saved(text: "saved on this device; \(waiting) edit(s) wait for the daemon: `listsync sync --replica \(folder)` sends them",
                         acknowledged: false, waiting: waiting))
    }

    var importReplica: ReplicaID? { nil }

    /// Received a part at a time into the device's copy and committed.
    func adopt(_ id: DocumentID, _ document: ListDocument) async throws {
        var position = 0, part: [ListOperation] = []
        while position < document.operationCount {
            part.removeAll(keepingCapacity: true)
            position = document.appendOperations(since: VersionVector(), from: position, before: document.operationCount,
                                                 limit: importPart, into: &part)
            try await upload(id, part)
        }
    }

    func upload(_ id: DocumentID, _ operations: [ListOperation]) async throws {
        let live = try await client.open(id)
        _ = live.receive(operations)
        try await client.commit(id, operations)
    }

    func destroy(_ info: DocumentInfo) async throws -> (text: String, json: [String: Any]) {
        let aside = try await client.drop(info.id)
        var json: [String: Any] = ["dropped": true, "id": info.id.description, "name": info.name, "replica": folder]
        if let aside { json["setAside"] = aside }
        let text = "removed \(shown(info.name)) (\(info.id)) from this device (\(folder))"
            + (aside.map { "; its unsent edits are kept in \($0)" } ?? "") + "; the daemon's copy is untouched"
        return (text, json)
    }

    func renameDocument(_ info: DocumentInfo, to name: String) async throws -> DocumentInfo {
        throw UsageError(message: "renaming a document needs the daemon: run it without --replica (a device copy keeps the name it was fetched with; Docs/Daemon.md, \"Renaming a document\")")
    }

    func status() async throws -> String {
        var docs: [[String: Any]] = []
        for (id, name) in try await client.documents() {
            _ = try await client.open(id)
            let info = await client.info(id)
            docs.append(["id": id.description, "name": name, "waiting": info?.waiting ?? 0, "epoch": info?.epoch ?? 0])
        }
        // This command never connects: the client's own state is always "offline", which says
        // nothing of the daemon. Say what is known: the copy, and what waits for the next sync.
        let waiting = await client.status.waiting
        let state = "not connected (status --replica reads this device's copy only; `listsync sync --replica \(folder)` "
            + (waiting == 0 ? "exchanges it with the daemon): no edit made here waits for the daemon"
                            : "sends them): \(waiting) edit(s) made here wait for the daemon")
        let object: [String: Any] = ["replica": folder, "replicaID": client.replica.description, "documents": docs,
                                     "waiting": waiting, "connected": false, "state": state]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }
}
