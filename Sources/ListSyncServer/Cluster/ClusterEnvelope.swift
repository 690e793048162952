import ListCRDT
import ListSyncCrypto
import ListSyncNATS

/// What a node publishes to a document's subject, and how a node checks what it reads there:
/// the batch's operations (``ListOperation/encode(_:)``), a `Nats-Msg-Id` made from the
/// operations' ids (a retry of the same batch is one message in the stream), and an HMAC-SHA256
/// tag under the cluster key over the subject and the payload, so that the broker, or anyone who
/// can publish to it, cannot inject operations. Pure: no I/O.
public enum ClusterEnvelope {
    /// The header that carries the tag (hex).
    public static let tagHeader = "Listsync-Tag"

    /// Why a message from the stream was refused (nothing of it is applied).
    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        /// No tag header.
        case untagged
        /// A tag that is not the cluster key's over this subject and payload.
        case badTag
        /// The payload is not a batch of operations.
        case malformed(String)

        public var description: String {
            switch self {
            case .untagged: return "no \(ClusterEnvelope.tagHeader) header"
            case .badTag: return "the tag is not the cluster key's"
            case let .malformed(why): return "not a batch of operations: \(why)"
            }
        }
    }

    /// The cluster key: HKDF-SHA256 of the daemon key (so every node of a cluster shares it, and
    /// it is not the key the daemons' connections prove).
    public static func clusterKey(daemonKey: [UInt8]) -> [UInt8] {
        HKDFSHA256.deriveKey(ikm: daemonKey, salt: Array("listsync cluster".utf8), info: Array("listsync cluster tag v1".utf8), length: 32)
    }

    /// The subject of a document.
    public static func subject(prefix: String, _ document: DocumentID) -> String { "\(prefix).\(document)" }

    /// The tag of `payload` on `subject`.
    static func tag(subject: String, payload: [UInt8], key: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticate(Array(subject.utf8) + [0] + payload, key: key)
    }

    /// The tag of `payload` on `subject`, as the header carries it (hex).
    public static func tagHex(subject: String, payload: [UInt8], key: [UInt8]) -> String {
        Hex.encode(tag(subject: subject, payload: payload, key: key))
    }

    /// The message id of a batch: the document and a hash of its operations' ids, in order.
    ///
    /// - Complexity: O(operations).
    public static func messageID(_ document: DocumentID, _ ops: [ListOperation]) -> String {
        var ids: [UInt8] = []
        for op in ops { ids += Array("\(op.id)/\(op.lastID);".utf8) }
        return "\(document)-" + Hex.encode(SHA256.hash(ids).prefix(16))
    }

    /// The payload and headers to publish `ops` on `subject` with.
    public static func seal(_ ops: [ListOperation], document: DocumentID, subject: String, key: [UInt8]) -> (payload: [UInt8], headers: NATSHeaders, messageID: String) {
        let payload = ListOperation.encode(ops)
        let headers = NATSHeaders([(tagHeader, tagHex(subject: subject, payload: payload, key: key))])
        return (payload, headers, messageID(document, ops))
    }

    /// The operations of a message read from the stream, once its tag is checked.
    ///
    /// - Throws: ``Refusal``; nothing is decoded from a message whose tag is wrong.
    public static func open(subject: String, headers: NATSHeaders?, payload: [UInt8], key: [UInt8]) throws(Refusal) -> [ListOperation] {
        guard let text = headers?[tagHeader] else { throw .untagged }
        guard let tag = Hex.decode(text), HMACSHA256.isValid(tag, for: Array(subject.utf8) + [0] + payload, key: key) else {
            throw .badTag
        }
        do { return try ListOperation.decode(payload) } catch { throw .malformed("\(error)") }
    }
}
