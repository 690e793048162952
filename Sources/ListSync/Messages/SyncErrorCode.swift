import ListCRDT

/// A document as `documents` lists it.
public struct DocumentInfo: Hashable, Sendable {
    /// Its id.
    public var id: DocumentID
    /// Its name.
    public var name: String
    /// Its epoch (a new one after a reset or a restore; 0 when the daemon has not loaded it).
    public var epoch: UInt64
    /// Operations applied (loaded documents only; 0 when not resident).
    public var operations: Int

    /// A listing entry.
    public init(id: DocumentID, name: String, epoch: UInt64, operations: Int) {
        self.id = id
        self.name = name
        self.epoch = epoch
        self.operations = operations
    }

    /// Why `name` cannot be a document's new name (``SyncMessage/rename(request:document:name:)``),
    /// or nil when it can: it must have 1 to ``SyncMessage/maxTextBytes`` bytes of UTF-8.
    ///
    /// - Complexity: O(1) (the UTF-8 view's count).
    public static func nameProblem(_ name: String) -> String? {
        let n = name.utf8.count
        if n == 0 { return "a document's name cannot be empty" }
        if n > SyncMessage.maxTextBytes { return "a document's name has at most \(SyncMessage.maxTextBytes) bytes, not \(n)" }
        return nil
    }
}

/// What went wrong, in an ``SyncMessage/error(request:document:code:text:)``.
public enum SyncErrorCode: UInt8, Sendable, CustomStringConvertible {
    /// No document with that id.
    case unknownDocument = 1
    /// The document has another epoch: it was reset or restored; re-attach from scratch.
    case epochMismatch = 2
    /// The message did not decode; the connection is closed after this error.
    case malformed = 3
    /// Operations of a batch the document refused (malformed, an equivocation, its causal buffer
    /// full). The other operations of that batch are durable and applied; no `ack` follows.
    case refused = 4
    /// A limit was reached (documents, rate); nothing of the request or batch was done.
    case limit = 5
    /// The daemon cannot write to its disk; nothing of the batch was applied or acknowledged.
    case storage = 6
    /// A request the daemon does not serve.
    case unsupported = 7
    /// Not allowed by the connection's credential (a read-only device's edit, a scoped device's
    /// create, a device asking for the status); nothing was done.
    case forbidden = 8
    /// The device's credential was revoked: the daemon closes the connection after this error
    /// (request 0); do not reconnect with it.
    case revoked = 9
    /// The device's credential expired: as ``revoked``.
    case expired = 10
    /// The document was destroyed (Docs/Daemon.md, "Destroying a document"): sent with request 0
    /// to each of its subscribers, whose subscription ends, and as the answer to a `subscribe`,
    /// a batch or a `create` with its id from then on. Drop the copy; do not create it again.
    /// New in message version 2 after presence: an older client finds it malformed.
    case destroyed = 11
    /// Operations of the batch were made before their author had seen the version the document
    /// was compacted at (Docs/Semantics.md §7): they may name collected state and were refused,
    /// nothing of them applied (the batch's other operations are durable and applied, as with
    /// ``refused``). Re-sync from the daemon's snapshot (subscribe again: the catch-up is a
    /// `snapshot`) and make the unsent edits again as new operations. New after `destroyed`: an
    /// older client finds it malformed (such a client is never left out of a compaction while it
    /// is subscribed, Docs/Protocol.md, "Compaction").
    case compacted = 12

    public var description: String {
        switch self {
        case .unknownDocument: return "unknown document"
        case .epochMismatch: return "epoch mismatch"
        case .malformed: return "malformed message"
        case .refused: return "refused"
        case .limit: return "limit reached"
        case .storage: return "storage failure"
        case .unsupported: return "unsupported"
        case .forbidden: return "forbidden"
        case .revoked: return "credential revoked"
        case .expired: return "credential expired"
        case .destroyed: return "document destroyed"
        case .compacted: return "made before the document's compaction floor"
        }
    }
}
