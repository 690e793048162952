import ListCRDT

/// What a connection's peer may do, from its credential (Docs/Security.md, "Credentials"):
/// which documents, and whether it may write. A holder of the daemon's key has ``full``.
public struct Access: Sendable, Equatable {
    /// The documents it may use; nil: every document.
    public var documents: Set<DocumentID>?
    /// Whether every edit and create is refused.
    public var readOnly: Bool
    /// Whether the peer is a device (a credential), not a holder of the daemon's key: no status.
    public var isDevice: Bool

    /// Everything: a holder of the daemon's key (the operator, a peer daemon).
    public static let full = Access(documents: nil, readOnly: false, isDevice: false)

    /// Access for a device.
    public init(documents: Set<DocumentID>?, readOnly: Bool, isDevice: Bool = true) {
        self.documents = documents
        self.readOnly = readOnly
        self.isDevice = isDevice
    }

    /// Whether `document` is within it.
    public func allows(_ document: DocumentID) -> Bool { documents?.contains(document) ?? true }

    /// Whether it may create documents: writable and not limited to named documents.
    public var mayCreate: Bool { !readOnly && documents == nil }
}
