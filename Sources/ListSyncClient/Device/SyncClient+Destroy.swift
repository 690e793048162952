import Foundation
import ListCRDT
import ListStore
import ListSync

/// A device's copy removed because the daemon destroyed its document (Docs/Client.md, "When a
/// document is destroyed").
public struct DestroyedCopy: Hashable, Sendable {
    /// The document.
    public var id: DocumentID
    /// Its name on this device.
    public var name: String
    /// The daemon's words.
    public var reason: String
    /// The edits of this device the daemon never acknowledged (0: the copy was removed).
    public var unsent: Int
    /// Where the copy was moved when it had unsent edits (`<folder>/aside/<id>-<epoch>`); nil when
    /// it was removed.
    public var setAside: String?
}

extension SyncClient {
    /// The copies removed because the daemon destroyed their document (since this client was
    /// made), by id.
    public var destroyedCopies: [DestroyedCopy] { destroyed.values.sorted { $0.id < $1.id } }

    /// Ends the report of a destroyed document whose unsent edits were set aside
    /// (``SyncFailure/documentDestroyed(_:unsent:folder:)``): the status goes back to what the
    /// other documents make it.
    public func dismissDestroyed(_ id: DocumentID) {
        guard destroyed[id]?.unsent ?? 0 > 0 else { return }
        destroyed[id]?.unsent = 0
        updateStatus()
    }

    /// The first destroyed document with unsent edits set aside, as the status reports it.
    var destroyedWithUnsentEdits: SyncFailure? {
        destroyedCopies.first { $0.unsent > 0 }.map { .documentDestroyed($0.id, unsent: $0.unsent, folder: $0.setAside ?? "") }
    }

    /// Removes a document's copy from this device: its store closed and its folder removed
    /// durably (renamed, synced, then deleted). With edits the daemon never acknowledged, the
    /// copy is moved to `<folder>/aside/<id>-<epoch>` instead, and that path is returned. No
    /// deletion record is kept: ``fetch(_:name:)`` brings the daemon's copy back.
    ///
    /// - Throws: ``SyncClientError/notOnDevice(_:)``, or ``SyncClientError/store(_:)``.
    @discardableResult
    public func drop(_ id: DocumentID) throws(SyncClientError) -> String? {
        try checkOpen()
        if copies[id] == nil { _ = try open(id) }
        guard let copy = copies[id] else { throw .notOnDevice(id) }
        return try remove(copy, destroyedAt: nil)
    }

    /// The daemon destroyed `copy`'s document: the copy goes (set aside when it has unsent
    /// edits), a deletion record keeps the id from being fetched or created again on this
    /// device, and nothing of it is sent to the daemon again.
    func destroyedOnDaemon(_ copy: LocalCopy, _ reason: String) {
        let unsent = copy.unacked.count
        do {
            let aside = try remove(copy, destroyedAt: UInt64(Date().timeIntervalSince1970 * 1000))
            destroyed[copy.id] = DestroyedCopy(id: copy.id, name: copy.name, reason: reason, unsent: aside == nil ? 0 : unsent,
                                               setAside: aside)
        } catch {
            copy.failure = .storage("removing the copy of destroyed document \(copy.id): \(error)")
        }
        updateStatus()
    }

    /// Closes `copy` and removes it from the device (or sets it aside if it has unsent edits);
    /// with `destroyedAt` (Unix ms), writes the device's deletion record first.
    private func remove(_ copy: LocalCopy, destroyedAt: UInt64?) throws(SyncClientError) -> String? {
        let unsent = copy.live.operations(since: copy.record.version).contains { $0.id.replica == replica }
        if let c = connection, copy.phase != .idle {
            send(c.session.unsubscribe(copy.id), on: c)
        }
        copies[copy.id] = nil
        copy.phase = .idle
        try? copy.store.close()
        copy.live.close()
        do {
            let aside = unsent ? try folder.setAside(copy.id, epoch: copy.record.epoch) : nil
            if let destroyedAt {
                try folder.data.destroy(copy.id, epoch: copy.record.epoch, time: destroyedAt)
            } else if aside == nil {
                try folder.data.remove(copy.id)
            }
            return aside
        } catch { throw .store(error) }
    }
}
