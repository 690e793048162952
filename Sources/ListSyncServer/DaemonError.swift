import ListCRDT
import ListStore
import ListSync

/// Why the daemon could not do something.
public enum DaemonError: Error, CustomStringConvertible, Sendable {
    case dataFolder(String)
    case key(String)
    /// The admin port's token file cannot be used (Docs/Security.md, "Admin port").
    case admin(String)
    case listen(String)
    case unknownDocument(DocumentID)
    /// The document was destroyed: its id is refused.
    case destroyed(DocumentID)
    /// A name a document cannot have (why).
    case invalidName(String)
    /// The document is at `epoch`, not the one a request named.
    case epochMismatch(DocumentID, epoch: UInt64)
    case storage(String)
    case limit(String)
    case stopping
    /// Cluster mode could not start (no NATS server answered, JetStream refused).
    case cluster(String)
    /// The devices file cannot be read or does not parse (the file and why).
    case devices(String)

    public var description: String {
        switch self {
        case let .dataFolder(s): return "data folder: \(s)"
        case let .key(s): return s
        case let .admin(s): return s
        case let .listen(s): return "cannot listen on \(s)"
        case let .unknownDocument(id): return ServerSession.unknownDocumentText(id)
        case let .destroyed(id): return "document \(id) was destroyed; its id is not used again"
        case let .invalidName(why): return why
        case let .epochMismatch(id, epoch): return "document \(id) is at epoch \(epoch), not the one asked for"
        case let .storage(s): return "storage: \(s)"
        case let .limit(s): return "limit: \(s)"
        case .stopping: return "the daemon is stopping"
        case let .cluster(s): return "cluster: \(s)"
        case let .devices(s): return "\(s); the daemon does not start with it (every device would be refused): fix or restore the file"
        }
    }

    static func from(_ error: any Error) -> DaemonError {
        if let e = error as? DaemonError { return e }
        if let e = error as? StoreError {
            if case let .unknownDocument(id) = e { return .unknownDocument(id) }
            if case let .destroyed(id) = e { return .destroyed(id) }
            return .storage(e.description)
        }
        return .storage("\(error)")
    }
}
