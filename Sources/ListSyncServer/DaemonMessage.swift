import ListCRDT
import ListStore

/// A document as `DOCS` lists it.
public struct DocumentInfo: Hashable, Sendable {
    /// Its id.
    public var id: DocumentID
    /// Its name.
    public var name: String
    /// Its epoch (a new one after a reset or a restore).
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
}

/// What went wrong, in an ``DaemonMessage/error(request:document:code:text:)``.
public enum DaemonErrorCode: UInt8, Sendable, CustomStringConvertible {
    /// No document with that id.
    case unknownDocument = 1
    /// The document has another epoch: it was reset or restored; re-attach from scratch.
    case epochMismatch = 2
    /// The message did not decode.
    case malformed = 3
    /// Operations the document refused, or a batch the store could not make durable.
    case refused = 4
    /// A limit was reached (documents, buffer, rate).
    case limit = 5
    /// The daemon cannot write to its disk; nothing was acknowledged.
    case storage = 6
    /// A request the daemon does not serve.
    case unsupported = 7

    public var description: String {
        switch self {
        case .unknownDocument: return "unknown document"
        case .epochMismatch: return "epoch mismatch"
        case .malformed: return "malformed message"
        case .refused: return "refused"
        case .limit: return "limit reached"
        case .storage: return "storage failure"
        case .unsupported: return "unsupported"
        }
    }
}

/// One message of the daemon protocol, carried in one transport frame (Docs/Daemon.md,
/// "Protocol"). Many documents share one connection; each message names its document.
public enum DaemonMessage: Equatable, Sendable {
    /// Attach to a document: "I hold `version` of it at `epoch`" (epoch 0: I hold nothing yet).
    case subscribe(document: DocumentID, epoch: UInt64, version: VersionVector)
    /// The subscription is live: the document's name, epoch and version; the operations the
    /// subscriber lacks follow as `operations` with batch 0, then every new one as it is made.
    case subscribed(document: DocumentID, name: String, epoch: UInt64, version: VersionVector)
    /// Stop receiving a document's operations.
    case unsubscribe(document: DocumentID)
    /// Operations for a document. A nonzero `batch` asks for an `ack` once they are durable.
    case operations(document: DocumentID, batch: UInt64, operations: [ListOperation])
    /// Batch `batch` is durable (and applied); the document is now at `version`.
    case ack(document: DocumentID, batch: UInt64, version: VersionVector)
    /// Anti-entropy: "I hold `version`"; the answer is the operations after it.
    case hello(document: DocumentID, version: VersionVector)
    /// Create a document. A peer passes the id and epoch it holds, so both daemons hold the same document.
    case create(request: UInt64, name: String, sections: [String], id: DocumentID?, epoch: UInt64)
    /// The document exists (made now, or already there with this id).
    case created(request: UInt64, document: DocumentID, epoch: UInt64)
    /// List the documents.
    case listDocuments(request: UInt64)
    /// The documents.
    case documents(request: UInt64, [DocumentInfo])
    /// Ask for the daemon's status.
    case status(request: UInt64)
    /// The status, as a JSON object.
    case statusReport(request: UInt64, json: String)
    /// A refusal: what and why. `request` or `document` say what it answers.
    case error(request: UInt64, document: DocumentID?, code: DaemonErrorCode, text: String)

    enum Tag: UInt8 {
        case subscribe = 1, subscribed, unsubscribe, operations, ack, hello, create, created,
             listDocuments, documents, status, statusReport, error
    }

    /// The protocol's version, the first byte of every message.
    public static let version: UInt8 = 1

    /// The message's bytes.
    ///
    /// - Complexity: O(size).
    public func encoded() -> [UInt8] {
        var w = WireWriter()
        w.byte(Self.version)
        switch self {
        case let .subscribe(doc, epoch, version):
            w.byte(Tag.subscribe.rawValue); w.document(doc); w.varint(epoch); w.version(version)
        case let .subscribed(doc, name, epoch, version):
            w.byte(Tag.subscribed.rawValue); w.document(doc); w.string(name); w.varint(epoch); w.version(version)
        case let .unsubscribe(doc):
            w.byte(Tag.unsubscribe.rawValue); w.document(doc)
        case let .operations(doc, batch, ops):
            w.byte(Tag.operations.rawValue); w.document(doc); w.varint(batch)
            w.bytes.append(contentsOf: ListOperation.encode(ops))
        case let .ack(doc, batch, version):
            w.byte(Tag.ack.rawValue); w.document(doc); w.varint(batch); w.version(version)
        case let .hello(doc, version):
            w.byte(Tag.hello.rawValue); w.document(doc); w.version(version)
        case let .create(request, name, sections, id, epoch):
            w.byte(Tag.create.rawValue); w.varint(request); w.string(name)
            w.count(sections.count)
            for s in sections { w.string(s) }
            if let id { w.byte(1); w.document(id) } else { w.byte(0) }
            w.varint(epoch)
        case let .created(request, doc, epoch):
            w.byte(Tag.created.rawValue); w.varint(request); w.document(doc); w.varint(epoch)
        case let .listDocuments(request):
            w.byte(Tag.listDocuments.rawValue); w.varint(request)
        case let .documents(request, list):
            w.byte(Tag.documents.rawValue); w.varint(request); w.count(list.count)
            for d in list { w.document(d.id); w.string(d.name); w.varint(d.epoch); w.count(d.operations) }
        case let .status(request):
            w.byte(Tag.status.rawValue); w.varint(request)
        case let .statusReport(request, json):
            w.byte(Tag.statusReport.rawValue); w.varint(request); w.string(json)
        case let .error(request, doc, code, text):
            w.byte(Tag.error.rawValue); w.varint(request)
            if let doc { w.byte(1); w.document(doc) } else { w.byte(0) }
            w.byte(code.rawValue); w.string(text)
        }
        return w.bytes
    }

    /// Decodes one whole message, validating all of it.
    ///
    /// - Throws: ``DaemonProtocolError`` saying what was wrong; nothing is applied.
    /// - Complexity: O(size).
    public init(decoding bytes: [UInt8]) throws(DaemonProtocolError) {
        var r = WireReader(bytes)
        do {
            let v = try r.byte()
            guard v == Self.version else { throw DaemonProtocolError.unsupportedVersion(v) }
            let t = try r.byte()
            guard let tag = Tag(rawValue: t) else { throw DaemonProtocolError.malformed("unknown message type \(t)") }
            switch tag {
            case .subscribe:
                self = .subscribe(document: try r.document(), epoch: try r.varint(), version: try r.version())
            case .subscribed:
                self = .subscribed(document: try r.document(), name: try r.string(), epoch: try r.varint(), version: try r.version())
            case .unsubscribe:
                self = .unsubscribe(document: try r.document())
            case .operations:
                let doc = try r.document()
                let batch = try r.varint()
                do {
                    self = .operations(document: doc, batch: batch, operations: try ListOperation.decode(try r.raw(r.remaining)))
                } catch {
                    throw DaemonProtocolError.malformed("operations: \(error)")
                }
            case .ack:
                self = .ack(document: try r.document(), batch: try r.varint(), version: try r.version())
            case .hello:
                self = .hello(document: try r.document(), version: try r.version())
            case .create:
                let request = try r.varint()
                let name = try r.string()
                let n = try r.count(minBytes: 1)
                var sections: [String] = []
                for _ in 0..<n { sections.append(try r.string()) }
                let id: DocumentID? = try r.byte() == 1 ? try r.document() : nil
                self = .create(request: request, name: name, sections: sections, id: id, epoch: try r.varint())
            case .created:
                self = .created(request: try r.varint(), document: try r.document(), epoch: try r.varint())
            case .listDocuments:
                self = .listDocuments(request: try r.varint())
            case .documents:
                let request = try r.varint()
                let n = try r.count(minBytes: 19)
                var list: [DocumentInfo] = []
                for _ in 0..<n {
                    list.append(DocumentInfo(id: try r.document(), name: try r.string(), epoch: try r.varint(),
                                             operations: try r.count(minBytes: 0)))
                }
                self = .documents(request: request, list)
            case .status:
                self = .status(request: try r.varint())
            case .statusReport:
                // A status lists every resident document: as long as a frame allows.
                self = .statusReport(request: try r.varint(), json: try r.string(limit: 1 << 20))
            case .error:
                let request = try r.varint()
                let doc: DocumentID? = try r.byte() == 1 ? try r.document() : nil
                let c = try r.byte()
                guard let code = DaemonErrorCode(rawValue: c) else { throw DaemonProtocolError.malformed("unknown error code \(c)") }
                self = .error(request: request, document: doc, code: code, text: try r.string())
            }
            guard r.isAtEnd else { throw DaemonProtocolError.malformed("\(r.remaining) trailing bytes") }
        } catch let e as DaemonProtocolError {
            throw e
        } catch {
            throw .malformed("\(error)")
        }
    }
}

/// Why a daemon-protocol message was refused.
public enum DaemonProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A protocol version this build does not speak.
    case unsupportedVersion(UInt8)
    /// The bytes are not a valid message.
    case malformed(String)

    public var description: String {
        switch self {
        case let .unsupportedVersion(v): return "unsupported daemon protocol version \(v)"
        case let .malformed(why): return "malformed message: \(why)"
        }
    }
}

extension WireWriter {
    mutating func document(_ id: DocumentID) { bytes.append(contentsOf: id.bytes) }
    mutating func string(_ s: String) {
        let u = Array(s.utf8)
        count(u.count)
        bytes.append(contentsOf: u)
    }
    mutating func version(_ v: VersionVector) {
        count(v.count)
        for e in v.entries { varint(e.replica.rawValue); varint(e.counter) }
    }
}

extension WireReader {
    mutating func document() throws(WireError) -> DocumentID {
        let at = offset
        guard let id = DocumentID(bytes: try raw(16)) else { throw .truncated(offset: at) }
        return id
    }
    /// A string of at most `limit` bytes (names and error texts: 64 KiB).
    mutating func string(limit: Int = 65_536) throws(WireError) -> String {
        let n = try count(minBytes: 1)
        guard n <= limit else { throw .countTooLarge(n, offset: offset) }
        return String(decoding: try raw(n), as: UTF8.self)
    }
    mutating func version() throws(WireError) -> VersionVector {
        let n = try count(minBytes: 2)
        var counters: [ReplicaID: UInt64] = [:]
        for _ in 0..<n {
            let at = offset
            let id = ReplicaID(try varint())
            let c = try varint()
            guard counters.updateValue(c, forKey: id) == nil else { throw .invalidValue("replica twice in a version", offset: at) }
        }
        return VersionVector(counters)
    }
}
