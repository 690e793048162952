import ListCRDT
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a store operation failed: what was wrong and where, in words a person can act on.
public enum StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A file call failed: the call's name (`"open"`, `"fdatasync"`, ...), its `errno` and the
    /// path it was about, when there is one.
    case system(call: String, errno: Int32, path: String?)
    /// Another process (or another ``DataFolder`` in this one) holds the data folder's lock file.
    case locked(path: String)
    /// A file that should be one of ours is not: wrong magic, another format version, another
    /// document, or a damaged header. The store refuses it and changes nothing.
    case notOurs(path: String, reason: String)
    /// A snapshot file failed its checks (header, length, checksum, or the document inside does
    /// not load). Nothing was changed; restore it or remove the folder and resync from peers.
    case corruptSnapshot(path: String, reason: String)
    /// The folder's files do not form a generation this store can have written (for example a log
    /// of generation g > 0 without its snapshot). Nothing was changed.
    case inconsistentFolder(path: String, reason: String)
    /// An operation batch does not fit in a log record even alone (a record holds at most
    /// `limit` bytes).
    case recordTooLarge(bytes: Int, limit: Int)
    /// ``DocumentStore/snapshot(_:)`` was handed a document that lacks operations the log holds:
    /// writing it would lose them.
    case snapshotBehindLog(replica: ReplicaID, logged: UInt64, inDocument: UInt64)
    /// The store is closed.
    case closed
    /// An earlier write or sync failed, so what the file holds is unknown (after a failed `fsync`
    /// the kernel may have dropped the dirty pages): every later call fails with the first error.
    /// Close the store and open it again; recovery keeps what is intact.
    case failed(first: String)
    /// A document id in text form is not 32 hexadecimal digits.
    case invalidDocumentID(String)
    /// The data folder has no document with this id.
    case unknownDocument(DocumentID)
    /// The document with this id was destroyed (its deletion record is in the data folder's
    /// `destroyed/`): it is not opened or created again.
    case destroyed(DocumentID)
    /// The data folder may be written by group or others (its permission bits are `mode`), who
    /// could then plant or swap documents, the lock or the key: it is refused until tightened.
    case insecureFolder(path: String, mode: UInt32)
    /// A record of the shared log that checked when the log was opened no longer checks or
    /// decodes when its document is loaded (the file changed under the daemon, or a bug).
    case corruptRecord(path: String, position: UInt64, reason: String)

    public var description: String {
        switch self {
        case let .corruptRecord(path, position, reason):
            return "the shared log's record at position \(position) in \(path) is damaged: \(reason)"

        case let .system(call, errno, path):
            let what = path.map { " on \($0)" } ?? ""
            return "\(call) failed\(what): \(Self.errnoDescription(errno)) (errno \(errno))"
        case let .locked(path):
            return "the data folder is in use: another process (or another DataFolder in this one) holds the lock \(path)"
        case let .notOurs(path, reason):
            return "\(path) is not a ListSync store file (\(reason)); it was left untouched"
        case let .corruptSnapshot(path, reason):
            return "snapshot \(path) is damaged (\(reason)); it was left untouched"
        case let .inconsistentFolder(path, reason):
            return "store folder \(path) is inconsistent: \(reason); nothing was changed"
        case let .recordTooLarge(bytes, limit):
            return "an operation of \(bytes) encoded bytes does not fit in a log record (at most \(limit))"
        case let .snapshotBehindLog(replica, logged, inDocument):
            return "the document to snapshot has operations of \(replica) up to \(inDocument) but the log has "
                + "up to \(logged); snapshot the document the logged operations were applied to"
        case .closed:
            return "the store is closed"
        case let .failed(first):
            return "the store failed earlier and must be reopened: \(first)"
        case let .invalidDocumentID(text):
            return "'\(text)' is not a document id (32 hexadecimal digits)"
        case let .unknownDocument(id):
            return "no document \(id) in the data folder"
        case let .destroyed(id):
            return "document \(id) was destroyed; its id is not used again"
        case let .insecureFolder(path, mode):
            return "data folder \(path) has mode \(String(mode, radix: 8)): group or others can write to it; "
                + "run `chmod 700 \(path)` (or `chmod go-w`) and start again"
        }
    }

    /// The C library's text for `errno`.
    static func errnoDescription(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

extension StoreError {
    /// Whether this is a file call that failed for want of space (`ENOSPC`).
    var isNoSpace: Bool {
        if case let .system(_, errno, _) = self { return errno == ENOSPC }
        return false
    }
}
