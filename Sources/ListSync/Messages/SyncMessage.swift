import ListCRDT

/// One message of the sync protocol, carried in one transport frame (Docs/Protocol.md). Many
/// documents share one connection; each message names its document or its request.
///
/// Every role speaks it: a device or command-line client (``ClientSession``), the daemon's side of
/// a connection (``ServerSession``), a daemon's link to a peer daemon (``PeerSession``), and the
/// simulator, which runs those same state machines.
public enum SyncMessage: Equatable, Sendable {
    /// Attach to a document: "I hold `version` of it at `epoch`" (epoch 0: I hold nothing yet).
    /// `learnsParted`: send me ``parted(document:ranges:)`` (a version-8 message, which a daemon
    /// of an older build refuses by its version byte; Docs/Protocol.md, "Compaction").
    /// `offersFloor`: a peer daemon's link that may offer its daemon's snapshot
    /// (``floorSnapshot(document:part:more:)``) when its daemon refuses, for its compaction floor,
    /// what this subscription relays (a version-11 message; an older daemon refuses it by its
    /// version byte, and the link subscribes without it from then on).
    case subscribe(document: DocumentID, epoch: UInt64, version: VersionVector, learnsParted: Bool = false, offersFloor: Bool = false)
    /// The subscription is live: the document's name, epoch and durable version. The operations the
    /// subscriber lacks follow as `operations` with batch 0, then ``synced(document:version:)``, then
    /// every new operation as it becomes durable.
    case subscribed(document: DocumentID, name: String, epoch: UInt64, version: VersionVector)
    /// The end of a catch-up (after a `subscribe` or a `hello`): everything the daemon held durable up
    /// to `version` that the subscriber lacked has been sent.
    case synced(document: DocumentID, version: VersionVector)
    /// Stop receiving a document's operations.
    case unsubscribe(document: DocumentID)
    /// Operations for a document. A nonzero `batch` asks for exactly one answer: an `ack` once they are
    /// durable and applied, or an `error` with that request number.
    case operations(document: DocumentID, batch: UInt64, operations: [ListOperation])
    /// Batch `batch` is durable and applied (every operation of it); the document is now at `version`.
    case ack(document: DocumentID, batch: UInt64, version: VersionVector)
    /// Anti-entropy: "I hold `version`"; the answer is the operations after it, then `synced`.
    case hello(document: DocumentID, version: VersionVector)
    /// Create a document. A peer passes the id and epoch it holds, so both daemons hold the same document.
    case create(request: UInt64, name: String, sections: [String], id: DocumentID?, epoch: UInt64)
    /// The document exists (made now, or already there with this id).
    case created(request: UInt64, document: DocumentID, epoch: UInt64)
    /// List the documents with an id greater than `after` (all, when nil): one page.
    case listDocuments(request: UInt64, after: DocumentID?)
    /// A page of documents, ordered by id; `more`: ask again after the last one for the rest.
    /// Request 0: a daemon announces new documents to a connection that listed them.
    case documents(request: UInt64, [DocumentInfo], more: Bool)
    /// Ask for the daemon's status.
    case status(request: UInt64)
    /// A part of the status (a JSON object's UTF-8 bytes, split where a frame ends); `more`: parts follow.
    case statusReport(request: UInt64, part: [UInt8], more: Bool)
    /// A refusal: what and why. `request` (a request or batch number) or `document` say what it answers.
    case error(request: UInt64, document: DocumentID?, code: SyncErrorCode, text: String)
    /// What a replica does with a document right now (a drag in progress, a selection): ephemeral,
    /// never stored or acknowledged. A client sends it for a live subscription; the daemon relays
    /// it to the document's other subscribers that sent one too (Docs/Protocol.md, "Presence").
    case presence(document: DocumentID, Presence)
    /// Destroy a document on the daemon: its data removed, its id refused from then on
    /// (Docs/Daemon.md, "Destroying a document"). `epoch` 0: whatever epoch it is at; another
    /// number: only if it is at that epoch. Only a holder of the daemon's key may ask.
    case destroy(request: UInt64, document: DocumentID, epoch: UInt64)
    /// The document is destroyed (now, or it was already): the answer to ``destroy(request:document:epoch:)``,
    /// with the epoch it had. Request 0: a daemon tells a connection that listed the documents that
    /// one was destroyed.
    case destroyed(request: UInt64, document: DocumentID, epoch: UInt64)
    /// Rename a document on the daemon (Docs/Protocol.md, "Renaming a document"). The answer is
    /// `documents(request:, [the document's info with its new name], more: false)`; a refusal is
    /// an `error` with the request's number. A read-only device, or one whose credential does not
    /// name the document, is refused.
    case rename(request: UInt64, document: DocumentID, name: String)
    /// What a subscriber has received of a live document: "replica `replica` has seen every
    /// operation of `version`" (Docs/Protocol.md, "Compaction"). The daemon computes from these
    /// which version is causally stable, and compacts there. Sent after a catch-up and when it
    /// changed, at most about once a second. No answer.
    case seen(document: DocumentID, replica: ReplicaID, version: VersionVector, role: SeenRole)
    /// A part of a document's snapshot (format 3, `Docs/WireFormat.md` §5.3), the catch-up of a
    /// subscriber whose version is behind the document's compaction floor: join the parts in
    /// order up to the one with `more` false, load them as the document (replacing the copy),
    /// then live operations and `synced` follow as after any catch-up.
    case snapshot(document: DocumentID, part: [UInt8], more: Bool)
    /// From the daemon to a subscriber that said `seen` with ``SeenRole/compactingDevice``: the
    /// document was compacted at `version`, its floor (Docs/Protocol.md, "Compaction"). Every
    /// replica that can still send operations has seen all of it and every later operation is
    /// after it, so a copy whose version is exactly `version` may compact there too
    /// (``ListCRDT/ListDocument/compact(stable:)``); any other copy ignores it. No answer.
    case stable(document: DocumentID, version: VersionVector)
    /// A peer daemon's stability table of a document (Docs/Protocol.md, "Compaction", and
    /// Docs/Semantics.md §7, "Peers"): daemon `from` says, per daemon it knows, the latest version
    /// at which that daemon was locally quiescent and the replicas it accounts for. Sent both ways
    /// on a peer link when the table changed, coalesced. No answer, never an error.
    case stability(document: DocumentID, from: ReplicaID, entries: [ReplicaID: PeerStability.Entry])
    /// From the daemon to a subscriber that asked for it (`subscribe` with `learnsParted`): the
    /// operations the document's daemons parted in merges back, as far as this daemon knows
    /// (Docs/Protocol.md, "Compaction"; Docs/Semantics.md §7, "A device learns what was parted"):
    /// right after `subscribed` when there are any, and again whenever they grow. A device does
    /// not wait for an acknowledged edit of its own a range names when it re-syncs. No answer.
    case parted(document: DocumentID, ranges: PartedRanges)
    /// From a device to its daemon (version 10, ``remadeVersion``): edits of its own, named by
    /// their counters, that it made again under new ids after a refusal it took as final, so that
    /// no copy keeps them as they are (Docs/Protocol.md, "Compaction"; Docs/Semantics.md §7, "An
    /// edit its author made again"). The daemon takes only the runs of the replica the
    /// subscription's `seen` named, and names them in its table's parted ranges. No answer.
    case remade(document: DocumentID, ranges: PartedRanges)
    /// From a peer daemon's link to the daemon it dials (version 11, ``floorVersion``), on a
    /// subscription that said `offersFloor`: a part of the link's daemon's snapshot (format 3, as
    /// ``snapshot(document:part:more:)``), offered because that daemon refused for its floor what
    /// this daemon's copy holds, or this copy is behind that floor (Docs/Protocol.md, "Compaction"; Docs/Semantics.md §7, "A left-out daemon that only accepts links"). Join the parts in order up to the one with
    /// `more` false; the daemon takes the snapshot, or merges its copy back onto it, exactly as its
    /// own link takes a peer's snapshot catch-up. Only a peer's link may send it (a device is
    /// refused, `forbidden`); an `error` (request 0) answers one it cannot take. No other answer.
    case floorSnapshot(document: DocumentID, part: [UInt8], more: Bool)

    enum Tag: UInt8 {
        case subscribe = 1, subscribed, unsubscribe, operations, ack, hello, create, created,
             listDocuments, documents, status, statusReport, error, synced, presence, destroy, destroyed, rename,
             seen, snapshot, stability
        case stable = 22
        case parted = 23
        case remade = 24
        case floorSnapshot = 25
    }

    /// The protocol's version, the first byte of every message. Version 2 added `synced`, paged
    /// `documents` and chunked `statusReport` (and later, without a new version, `presence`,
    /// `destroy`, `destroyed`, `rename`, `seen` and `snapshot`: older peers find those malformed;
    /// Docs/Protocol.md says who may send them to whom). Version 3 was an `operations` message whose
    /// batch holds field writes in wire format 3; version 4 is the same in wire format 4 (field names
    /// by number after their first use, clocks as differences: Docs/WireFormat.md §2.7), which a
    /// version-3 build cannot read. Every message is written in the oldest version that can hold it
    /// (``encodedVersion``): a version-2 or version-3 peer or device is served every document without
    /// fields as before, and refuses a version-4 message with its own "unsupported sync protocol
    /// version 4" (code 3) rather than misread it. Versions 2, 3 and 4 are read; a version-1 peer's
    /// messages are refused with ``SyncProtocolError/unsupportedVersion(_:)``. Version 5 is a
    /// `presence` message with a caret (``caretVersion``); version 6 an `operations` message
    /// whose batch holds a section inserted with its fields, wire format 5
    /// (``sectionFieldsVersion``), which a build that reads at most version 5 refuses by its
    /// version byte, never misreads. Version 7 is an `operations` message whose batch holds a text
    /// run, wire format 6 (``textRunsVersion``), refused likewise by a build that reads at most 6.
    /// Version 8 is a `subscribe` that asks for `parted` (a flags field after the version), and
    /// `parted` itself (``partedVersion``): a build that reads at most 7 refuses both by their
    /// version byte, and a client that reads that refusal subscribes without asking from then on.
    /// Version 9 is an `operations` message whose batch holds a text block, wire format 7
    /// (``textBlocksVersion``): a build that reads at most 8 refuses it by its version byte.
    /// Version 10 is `remade` (``remadeVersion``), from a device to its daemon: a build that
    /// reads at most 9 refuses it by its version byte, and the device sends no more of them there.
    /// Version 11 is a `subscribe` whose flags say `offersFloor` (bit 1) and `floorSnapshot` (tag
    /// 25, ``floorVersion``), from a peer's link: a build that reads at most 10 refuses the
    /// `subscribe` by its version byte, and the link subscribes without the flag (and never sends
    /// `floorSnapshot`) there from then on.
    public static let version: UInt8 = 11

    /// The version of an `operations` message with field writes (wire format 4).
    public static let fieldsVersion: UInt8 = 4
    /// The version of a `presence` message with a caret in a text field (kind 3): a build that
    /// reads at most version 4 refuses it with its own version error, never misreads it.
    public static let caretVersion: UInt8 = 5

    /// The version of an `operations` message whose batch holds a section inserted with its
    /// fields (wire format 5, Docs/WireFormat.md §2.7).
    public static let sectionFieldsVersion: UInt8 = 6

    /// The version of an `operations` message whose batch holds a text run: consecutive
    /// one-character splices of one text field by one replica, one record (wire format 6,
    /// Docs/WireFormat.md §2.9).
    public static let textRunsVersion: UInt8 = 7

    /// The version of a `subscribe` that asks for `parted`, and of `parted` (tag 23).
    public static let partedVersion: UInt8 = 8

    /// The version of an `operations` message whose batch holds a text block: consecutive
    /// one-character splices of one text field by one replica, one record of runs (wire format 7,
    /// Docs/WireFormat.md §2.10). Every batch that wire format 6 wrote with a text run is one:
    /// typing two keystrokes in one batch sends version 9 where builds before it sent 7.
    public static let textBlocksVersion: UInt8 = 9

    /// The version of `remade` (tag 24), a device's own edits it made again.
    public static let remadeVersion: UInt8 = 10

    /// The version of a `subscribe` that says `offersFloor`, and of `floorSnapshot` (tag 25).
    public static let floorVersion: UInt8 = 11

    /// The oldest version read (and written, for every message that needs nothing newer).
    public static let oldestVersion: UInt8 = 2

    /// The version this message is written in: 9 for an `operations` message whose batch holds a
    /// text block (wire format 7; builds before it wrote 7, a text run of wire format 6, which this
    /// build still reads); 6 for an `operations` message whose batch holds a
    /// section inserted with its fields (wire format 5), 4 for one whose batch holds a field write
    /// or an item inserted with fields (wire format 4), 5 for a `presence` with a caret, else 2.
    ///
    /// - Complexity: O(n) for n operations.
    public var encodedVersion: UInt8 {
        if case .operations(_, _, let ops) = self, ops.contains(where: \.carriesFields) {
            if ListOperation.needsWireFormat7(ops) { return Self.textBlocksVersion }
            return ops.contains(where: \.needsWireFormat5) ? Self.sectionFieldsVersion : Self.fieldsVersion
        }
        if case .presence(_, let p) = self, case .editing = p.activity { return Self.caretVersion }
        if case .subscribe(_, _, _, _, true) = self { return Self.floorVersion }
        if case .subscribe(_, _, _, true, _) = self { return Self.partedVersion }
        if case .floorSnapshot = self { return Self.floorVersion }
        if case .parted = self { return Self.partedVersion }
        if case .remade = self { return Self.remadeVersion }
        return Self.oldestVersion
    }

    /// The type byte of `operations` messages (the second byte of the frame): a relay peeks at it.
    public static let operationsTag: UInt8 = Tag.operations.rawValue

    /// The type byte of `seen`: an older daemon names it in its refusal ("unknown message type 19").
    public static let seenTag: UInt8 = Tag.seen.rawValue
    /// The type byte of `stability` (21): a peer link relays these frames to its peer as they are.
    public static let stabilityTag: UInt8 = Tag.stability.rawValue
    /// The type byte of `floorSnapshot` (25): a peer link relays these frames to its peer as they are.
    public static let floorSnapshotTag: UInt8 = Tag.floorSnapshot.rawValue

    /// The longest name or error text, in UTF-8 bytes.
    public static let maxTextBytes = 65_536

    /// The message's bytes.
    ///
    /// - Complexity: O(size).
    public func encoded() -> [UInt8] {
        var w = WireWriter()
        w.byte(encodedVersion)
        switch self {
        case let .subscribe(doc, epoch, version, learnsParted, offersFloor):
            w.byte(Tag.subscribe.rawValue); w.document(doc); w.varint(epoch); w.version(version)
            // Version 8: flags (bit 0, send `parted`); version 11: bit 1, offers `floorSnapshot`.
            if learnsParted || offersFloor {
                w.varint((learnsParted ? Self.subscribeLearnsParted : 0) | (offersFloor ? Self.subscribeOffersFloor : 0))
            }
        case let .subscribed(doc, name, epoch, version):
            w.byte(Tag.subscribed.rawValue); w.document(doc); w.string(name); w.varint(epoch); w.version(version)
        case let .synced(doc, version):
            w.byte(Tag.synced.rawValue); w.document(doc); w.version(version)
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
            w.optionalDocument(id)
            w.varint(epoch)
        case let .created(request, doc, epoch):
            w.byte(Tag.created.rawValue); w.varint(request); w.document(doc); w.varint(epoch)
        case let .listDocuments(request, after):
            w.byte(Tag.listDocuments.rawValue); w.varint(request); w.optionalDocument(after)
        case let .documents(request, list, more):
            w.byte(Tag.documents.rawValue); w.varint(request); w.count(list.count)
            for d in list { w.documentInfo(d) }
            w.byte(more ? 1 : 0)
        case let .status(request):
            w.byte(Tag.status.rawValue); w.varint(request)
        case let .statusReport(request, part, more):
            w.byte(Tag.statusReport.rawValue); w.varint(request); w.count(part.count)
            w.bytes.append(contentsOf: part)
            w.byte(more ? 1 : 0)
        case let .error(request, doc, code, text):
            w.byte(Tag.error.rawValue); w.varint(request); w.optionalDocument(doc)
            w.byte(code.rawValue); w.string(text)
        case let .presence(doc, presence):
            w.byte(Tag.presence.rawValue); w.document(doc); w.presence(presence)
        case let .destroy(request, doc, epoch):
            w.byte(Tag.destroy.rawValue); w.varint(request); w.document(doc); w.varint(epoch)
        case let .destroyed(request, doc, epoch):
            w.byte(Tag.destroyed.rawValue); w.varint(request); w.document(doc); w.varint(epoch)
        case let .rename(request, doc, name):
            w.byte(Tag.rename.rawValue); w.varint(request); w.document(doc); w.string(name)
        case let .seen(doc, replica, version, role):
            w.byte(Tag.seen.rawValue); w.document(doc); w.varint(replica.rawValue); w.version(version); w.byte(role.rawValue)
        case let .stable(doc, version):
            w.byte(Tag.stable.rawValue); w.document(doc); w.version(version)
        case let .snapshot(doc, part, more):
            w.byte(Tag.snapshot.rawValue); w.document(doc); w.count(part.count)
            w.bytes.append(contentsOf: part)
            w.byte(more ? 1 : 0)
        case let .stability(doc, from, entries):
            w.byte(Tag.stability.rawValue); w.document(doc); w.varint(from.rawValue); w.stabilityEntries(entries)
        case let .parted(doc, ranges):
            w.byte(Tag.parted.rawValue); w.document(doc); w.partedRuns(ranges)
        case let .remade(doc, ranges):
            w.byte(Tag.remade.rawValue); w.document(doc); w.partedRuns(ranges)
        case let .floorSnapshot(doc, part, more):
            w.byte(Tag.floorSnapshot.rawValue); w.document(doc); w.count(part.count)
            w.bytes.append(contentsOf: part)
            w.byte(more ? 1 : 0)
        }
        return w.bytes
    }

    /// Decodes one whole message, validating all of it.
    ///
    /// - Throws: ``SyncProtocolError`` saying what was wrong; nothing is applied.
    /// - Complexity: O(size).
    public init(decoding bytes: [UInt8]) throws(SyncProtocolError) {
        var r = WireReader(bytes)
        do {
            let v = try r.byte()
            guard v >= Self.oldestVersion, v <= Self.version else { throw SyncProtocolError.unsupportedVersion(v) }
            let t = try r.byte()
            guard let tag = Tag(rawValue: t) else { throw SyncProtocolError.malformed("unknown message type \(t)") }
            self = try Self.decodeBody(tag, version: v, &r)
            guard r.isAtEnd else { throw SyncProtocolError.malformed("\(r.remaining) trailing bytes") }
        } catch let e as SyncProtocolError {
            throw e
        } catch {
            throw .malformed("\(error)")
        }
    }

    /// The flag of a version-8 `subscribe` asking for `parted`.
    static let subscribeLearnsParted: UInt64 = 1
    /// The flag of a version-11 `subscribe` saying `offersFloor`.
    static let subscribeOffersFloor: UInt64 = 2

    private static func decodeBody(_ tag: Tag, version v: UInt8, _ r: inout WireReader) throws -> SyncMessage {
        switch tag {
        case .subscribe:
            let doc = try r.document(), epoch = try r.varint(), version = try r.version()
            guard v >= partedVersion else { return .subscribe(document: doc, epoch: epoch, version: version) }
            let at = r.offset
            let flags = try r.varint()
            let known = v >= floorVersion ? subscribeLearnsParted | subscribeOffersFloor : subscribeLearnsParted
            guard flags & ~known == 0 else { throw WireError.invalidValue("subscribe flags \(flags)", offset: at) }
            return .subscribe(document: doc, epoch: epoch, version: version, learnsParted: flags & subscribeLearnsParted != 0,
                              offersFloor: flags & subscribeOffersFloor != 0)
        case .subscribed:
            return .subscribed(document: try r.document(), name: try r.string(), epoch: try r.varint(), version: try r.version())
        case .synced:
            return .synced(document: try r.document(), version: try r.version())
        case .unsubscribe:
            return .unsubscribe(document: try r.document())
        case .operations:
            let doc = try r.document()
            let batch = try r.varint()
            do {
                return .operations(document: doc, batch: batch, operations: try ListOperation.decode(try r.raw(r.remaining)))
            } catch {
                throw SyncProtocolError.malformed("operations: \(error)")
            }
        case .ack:
            return .ack(document: try r.document(), batch: try r.varint(), version: try r.version())
        case .hello:
            return .hello(document: try r.document(), version: try r.version())
        case .create:
            let request = try r.varint()
            let name = try r.string()
            let n = try r.count(minBytes: 1)
            var sections: [String] = []
            for _ in 0..<n { sections.append(try r.string()) }
            return .create(request: request, name: name, sections: sections, id: try r.optionalDocument(), epoch: try r.varint())
        case .created:
            return .created(request: try r.varint(), document: try r.document(), epoch: try r.varint())
        case .listDocuments:
            return .listDocuments(request: try r.varint(), after: try r.optionalDocument())
        case .documents:
            let request = try r.varint()
            let n = try r.count(minBytes: 19)
            var list: [DocumentInfo] = []
            list.reserveCapacity(n)
            for _ in 0..<n { list.append(try r.documentInfo()) }
            return .documents(request: request, list, more: try r.flag())
        case .status:
            return .status(request: try r.varint())
        case .statusReport:
            let request = try r.varint()
            let n = try r.count(minBytes: 1)
            return .statusReport(request: request, part: Array(try r.raw(n)), more: try r.flag())
        case .error:
            let request = try r.varint()
            let doc = try r.optionalDocument()
            let c = try r.byte()
            guard let code = SyncErrorCode(rawValue: c) else { throw SyncProtocolError.malformed("unknown error code \(c)") }
            return .error(request: request, document: doc, code: code, text: try r.string())
        case .presence:
            return .presence(document: try r.document(), try r.presence())
        case .destroy:
            return .destroy(request: try r.varint(), document: try r.document(), epoch: try r.varint())
        case .destroyed:
            return .destroyed(request: try r.varint(), document: try r.document(), epoch: try r.varint())
        case .rename:
            return .rename(request: try r.varint(), document: try r.document(), name: try r.string())
        case .seen:
            let doc = try r.document()
            let at = r.offset
            let replica = try r.varint()
            guard replica != 0 else { throw WireError.invalidValue("replica 0 in seen", offset: at) }
            let version = try r.version()
            let roleAt = r.offset
            let b = try r.byte()
            guard let role = SeenRole(rawValue: b) else { throw WireError.invalidValue("seen role \(b)", offset: roleAt) }
            return .seen(document: doc, replica: ReplicaID(replica), version: version, role: role)
        case .stable:
            return .stable(document: try r.document(), version: try r.version())
        case .snapshot:
            let doc = try r.document()
            let n = try r.count(minBytes: 1)
            return .snapshot(document: doc, part: Array(try r.raw(n)), more: try r.flag())
        case .stability:
            let doc = try r.document()
            let at = r.offset
            let from = try r.varint()
            guard from != 0 else { throw WireError.invalidValue("daemon 0 in stability", offset: at) }
            return .stability(document: doc, from: ReplicaID(from), entries: try r.stabilityEntries())
        case .parted:
            guard v >= partedVersion else { throw SyncProtocolError.malformed("parted in a version-\(v) message") }
            return .parted(document: try r.document(), ranges: try r.partedRuns())
        case .remade:
            guard v >= remadeVersion else { throw SyncProtocolError.malformed("remade in a version-\(v) message") }
            return .remade(document: try r.document(), ranges: try r.partedRuns())
        case .floorSnapshot:
            guard v >= floorVersion else { throw SyncProtocolError.malformed("floorSnapshot in a version-\(v) message") }
            let doc = try r.document()
            let n = try r.count(minBytes: 1)
            return .floorSnapshot(document: doc, part: Array(try r.raw(n)), more: try r.flag())
        }
    }
}

/// Why a sync-protocol message was refused.
public enum SyncProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A protocol version this build does not speak.
    case unsupportedVersion(UInt8)
    /// The bytes are not a valid message.
    case malformed(String)

    public var description: String {
        switch self {
        case let .unsupportedVersion(v):
            return "unsupported sync protocol version \(v) (this build speaks \(SyncMessage.oldestVersion) to \(SyncMessage.version))"
        case let .malformed(why): return "malformed message: \(why)"
        }
    }
}

extension WireWriter {
    mutating func document(_ id: DocumentID) { bytes.append(contentsOf: id.bytes) }
    mutating func optionalDocument(_ id: DocumentID?) {
        if let id { byte(1); document(id) } else { byte(0) }
    }
    mutating func string(_ s: String) {
        let u = Array(s.utf8)
        count(u.count)
        bytes.append(contentsOf: u)
    }
    mutating func version(_ v: VersionVector) {
        count(v.count)
        for e in v.entries { varint(e.replica.rawValue); varint(e.counter) }
    }
    mutating func documentInfo(_ d: DocumentInfo) {
        document(d.id); string(d.name); varint(d.epoch); count(d.operations)
    }
}

extension WireReader {
    mutating func document() throws(WireError) -> DocumentID {
        let at = offset
        guard let id = DocumentID(bytes: try raw(16)) else { throw .truncated(offset: at) }
        return id
    }
    mutating func optionalDocument() throws(WireError) -> DocumentID? {
        try flag() ? try document() : nil
    }
    /// A presence byte: 0 or 1, anything else is malformed.
    mutating func flag() throws(WireError) -> Bool {
        let at = offset
        switch try byte() {
        case 0: return false
        case 1: return true
        case let b: throw .invalidValue("flag byte \(b)", offset: at)
        }
    }
    /// A string of at most `limit` bytes (names and error texts: 64 KiB).
    mutating func string(limit: Int = SyncMessage.maxTextBytes) throws(WireError) -> String {
        let n = try count(minBytes: 1)
        guard n <= limit else { throw .countTooLarge(n, offset: offset) }
        return String(decoding: try raw(n), as: UTF8.self)
    }
    /// ``string(limit:)`` that refuses bytes that are not UTF-8 instead of replacing them (each
    /// replacement character takes three bytes, so a repaired string can pass its limit).
    mutating func validString(limit: Int) throws(WireError) -> String {
        let at = offset
        let n = try count(minBytes: 1)
        guard n <= limit else { throw .countTooLarge(n, offset: offset) }
        guard let s = String(validating: try raw(n), as: UTF8.self) else {
            throw .invalidValue("a string that is not UTF-8", offset: at)
        }
        return s
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
    mutating func documentInfo() throws(WireError) -> DocumentInfo {
        DocumentInfo(id: try document(), name: try string(), epoch: try varint(), operations: try count(minBytes: 0))
    }
}
