import Foundation
import Testing
@testable import ListCRDT
import ListSync
import ListSyncTestSupport

/// The messages of protocol version 2 (Docs/Protocol.md): bytes, round trips, refusals.
@Suite struct SyncMessageTests {
    static let version = VersionVector([ReplicaID(1): 3, ReplicaID(300): 2])

    /// One message of every kind, with its tag byte (Docs/Protocol.md, "Messages").
    static func everyKind() -> [(tag: UInt8, message: SyncMessage)] {
        let doc = Fixture.document
        let ops = Fixture.typed(3).operations
        let info = DocumentInfo(id: doc, name: "groceries", epoch: 7, operations: 4)
        return [
            (1, .subscribe(document: doc, epoch: 7, version: version)),
            (2, .subscribed(document: doc, name: "groceries", epoch: 7, version: version)),
            (3, .unsubscribe(document: doc)),
            (4, .operations(document: doc, batch: 12, operations: ops)),
            (5, .ack(document: doc, batch: 12, version: version)),
            (6, .hello(document: doc, version: VersionVector())),
            (7, .create(request: 1, name: "list", sections: ["a", "b"], id: doc, epoch: 7)),
            (8, .created(request: 1, document: doc, epoch: 7)),
            (9, .listDocuments(request: 2, after: nil)),
            (10, .documents(request: 2, [info, info], more: true)),
            (11, .status(request: 3)),
            (12, .statusReport(request: 3, part: Array("{\"a\":1}".utf8), more: false)),
            (13, .error(request: 0, document: nil, code: .malformed, text: "bad")),
            (14, .synced(document: doc, version: version)),
            (16, .destroy(request: 4, document: doc, epoch: 7)),
            (17, .destroyed(request: 4, document: doc, epoch: 7)),
            (13, .error(request: 0, document: doc, code: .destroyed, text: "destroyed")),
            (18, .rename(request: 5, document: doc, name: "weekend groceries")),
            (19, .seen(document: doc, replica: ReplicaID(300), version: version, role: .device)),
            (19, .seen(document: doc, replica: ReplicaID(1), version: VersionVector(), role: .relay)),
            (19, .seen(document: doc, replica: ReplicaID(2), version: version, role: .compactingDevice)),
            (22, .stable(document: doc, version: version)),
            (20, .snapshot(document: doc, part: [0x4c, 0x53, 0, 3], more: true)),
            (20, .snapshot(document: doc, part: [7], more: false)),
            (21, .stability(document: doc, from: ReplicaID(300), entries: [:])),
            (21, .stability(document: doc, from: ReplicaID(300), entries: [
                ReplicaID(300): PeerStability.Entry(sequence: 4, version: version, claimed: [ReplicaID(300), ReplicaID(1)]),
                ReplicaID(301): PeerStability.Entry(sequence: 0, version: VersionVector(), claimed: []),
            ])),
            (13, .error(request: 9, document: doc, code: .compacted, text: "before the floor")),
        ] + PresenceMessageTests.examples.map { (15, .presence(document: doc, $0)) }
    }

    @Test("every message starts with version 2 and its tag byte, and decodes to itself")
    func roundTrips() throws {
        for (tag, m) in Self.everyKind() {
            let bytes = m.encoded()
            #expect(Array(bytes.prefix(2)) == [2, tag], "\(m)")
            #expect(try SyncMessage(decoding: bytes) == m)
        }
        #expect(SyncMessage.operationsTag == 4)
        #expect(SyncMessage.version == 11 && SyncMessage.oldestVersion == 2)
    }

    @Test("version 4 only for operations messages that carry fields; a version-3 build's field message still reads")
    func versionFourOnlyForFields() throws {
        let doc = DocumentID(bytes: Array(repeating: 7, count: 16))!
        var d = ListDocument(replica: ReplicaID(1))
        let s = try d.insertSection(at: 0, value: Data())
        let i = try d.insertItem(at: IndexPath(item: 0, section: 0), value: Data())
        let f = try d.setField("title", to: .string("milk"), ofItem: ItemID(i.id))
        let withFields = try d.insertItem(at: IndexPath(item: 1, section: 0), fields: ["title": .set(.string("eggs"))])
        let plain = SyncMessage.operations(document: doc, batch: 1, operations: [s, i])
        let fields = SyncMessage.operations(document: doc, batch: 2, operations: [f])
        let inserted = SyncMessage.operations(document: doc, batch: 3, operations: [withFields])
        #expect(plain.encoded().first == 2)
        #expect(fields.encoded().first == 4)
        #expect(inserted.encoded().first == 4, "an item inserted with fields needs wire format 4 too")
        #expect(try SyncMessage(decoding: fields.encoded()) == fields)
        #expect(try SyncMessage(decoding: inserted.encoded()) == inserted)
        let t = try d.splice("notes", ofItem: ItemID(i.id), at: 0, insert: "oat")
        let text = SyncMessage.operations(document: doc, batch: 4, operations: [f, t])
        #expect(text.encoded().first == 4, "a text edit is a field write: wire format 4")
        #expect(try SyncMessage(decoding: text.encoded()) == text)
        for v: UInt8 in [1, SyncMessage.version + 1] {
            var bytes = plain.encoded()
            bytes[0] = v
            #expect(throws: SyncProtocolError.unsupportedVersion(v)) { try SyncMessage(decoding: bytes) }
        }
        // A version-3 message, as the build before wrote it (its batch in wire format 3: the worked
        // example of Docs/WireFormat.md §2.7), still reads.
        let v3Batch = "03 02 02 01 01 0c 00 10 01 04 05 04 05 01 01 05 74 69 74 6c 65 00 00 00 05 08 6f 61 74 20 6d 69 6c 6b"
            .split(separator: " ").map { UInt8($0, radix: 16)! }
        let head = SyncMessage.operations(document: doc, batch: 9, operations: []).encoded()
        let emptyBatch = ListOperation.encode([ListOperation]())
        var v3 = Array(head.prefix(head.count - emptyBatch.count)) + v3Batch
        v3[0] = 3
        guard case .operations(_, 9, let ops) = try SyncMessage(decoding: v3) else { Issue.record("not operations"); return }
        #expect(ops.count == 1 && ops[0].carriesFields)
    }

    /// Docs/Protocol.md, "From version 5 to version 6": only an `operations` message holding a
    /// section inserted with its fields is version 6; every other message is written as before,
    /// so an older peer is served everything else and refuses that one by its version byte (as
    /// this build's session refuses a message one version newer than it: an error, code 3, and
    /// the connection closed), never misreading it.
    @Test("version 6 only for a section inserted with fields; an older peer refuses it with code 3 and a close, never misreads it")
    func versionSixOnlyForSectionsWithFields() throws {
        let doc = DocumentID(bytes: Array(repeating: 7, count: 16))!
        var d = ListDocument(replica: ReplicaID(1))
        let s = try d.insertSection(at: 0, value: Data())
        let f = try d.writeFields(["title": .set(.string("To do"))], ofSection: SectionID(s.id))
        let withFields = try d.insertSection(at: 1, value: Data(), fields: ["title": .set(.string("Done"))])
        let plain = SyncMessage.operations(document: doc, batch: 1, operations: [s])
        let fields = SyncMessage.operations(document: doc, batch: 2, operations: [f])
        let inserted = SyncMessage.operations(document: doc, batch: 3, operations: [s, f, withFields])
        #expect(plain.encoded().first == 2 && fields.encoded().first == 4, "written as a version-5 build writes them")
        #expect(inserted.encoded().first == SyncMessage.sectionFieldsVersion)
        #expect(try SyncMessage(decoding: inserted.encoded()) == inserted)
        // What an older build does with a message newer than it: this build's session given one
        // version past its own answers with a version error and closes, having taken nothing.
        var newer = inserted.encoded()
        newer[0] = SyncMessage.version + 1
        var session = ServerSession(maxFrame: 1 << 20, rateLimit: nil, now: 0)
        let actions = session.receive(newer, now: 0)
        guard actions.count == 2, case .send(let answer) = actions[0], case .close = actions[1],
              case .error(0, nil, .malformed, let text) = try SyncMessage(decoding: answer) else {
            Issue.record("not refused with an error and a close: \(actions)"); return
        }
        #expect(text.contains("unsupported sync protocol version \(SyncMessage.version + 1)"))
        #expect(session.isClosed)
    }

    /// Docs/Protocol.md, "From version 8 to version 9" (and "From version 6 to version 7"): only an
    /// `operations` message holding a text block (two consecutive one-character splices in one
    /// field, wire format 7) is version 9; what a build before it sent as version 7 (the batch's
    /// typing as text runs, wire format 6) still decodes to the same operations.
    @Test("version 9 only for a batch holding a text block; a single keystroke or a paste stays version 4; version 7 still reads")
    func versionNineOnlyForTextBlocks() throws {
        let doc = DocumentID(bytes: Array(repeating: 7, count: 16))!
        var d = ListDocument(replica: ReplicaID(1))
        _ = try d.insertSection(at: 0, value: Data())
        let i = try d.insertItem(at: IndexPath(item: 0, section: 0), value: Data())
        let a = try d.splice("notes", ofItem: ItemID(i.id), at: 0, insert: "o")
        let b = try d.splice("notes", ofItem: ItemID(i.id), at: 1, insert: "a")
        let paste = try d.splice("notes", ofItem: ItemID(i.id), at: 2, insert: "ts")
        let back = try d.splice("notes", ofItem: ItemID(i.id), at: 3, delete: 1)
        let again = try d.splice("notes", ofItem: ItemID(i.id), at: 3, insert: "!")
        let one = SyncMessage.operations(document: doc, batch: 1, operations: [a])
        let pasted = SyncMessage.operations(document: doc, batch: 2, operations: [a, paste])
        let run = SyncMessage.operations(document: doc, batch: 3, operations: [a, b])
        let block = SyncMessage.operations(document: doc, batch: 4, operations: [back, again])
        #expect(one.encoded().first == 4 && pasted.encoded().first == 4)
        #expect(run.encoded().first == SyncMessage.textBlocksVersion && block.encoded().first == SyncMessage.textBlocksVersion)
        #expect(try SyncMessage(decoding: run.encoded()) == run)
        #expect(try SyncMessage(decoding: block.encoded()) == block)
        // Its batch is wire format 7, which a build reading at most 6 refuses by its version byte.
        #expect(ListOperation.encode([a, b])[0] == ListOperation.textBlockWireFormatVersion)
        // A version-7 message of a build before: the same operations, the batch as text runs.
        let older = [SyncMessage.textRunsVersion, SyncMessage.operationsTag] + Array(repeating: 7, count: 16) + [3]
            + ListOperation.encodeWithTextRuns([a, b])
        #expect(ListOperation.encodeWithTextRuns([a, b])[0] == ListOperation.textRunWireFormatVersion)
        #expect(try SyncMessage(decoding: older) == run)
    }

    @Test("every strict prefix of every message is refused with a typed error")
    func prefixes() {
        for (_, m) in Self.everyKind() { expectEveryPrefixRefused(m.encoded()) }
    }

    @Test("a message split across the byte stream at every offset reads back whole")
    func streamSplits() {
        let frames = Self.everyKind().map { $0.message.encoded() }
        for pieces in ByteStream.splits(frames) {
            #expect(ByteStream.frames(pieces).compactMap(decoded) == Self.everyKind().map(\.message))
        }
    }

    @Test("hex example: subscribe, byte for byte (Docs/Protocol.md)")
    func hexSubscribe() throws {
        let m = SyncMessage.subscribe(document: Fixture.document, epoch: 7, version: Self.version)
        let hex = "02 01 0123456789abcdef fedcba9876543210 07 02 01 03 ac02 02"
        #expect(m.encoded() == Self.bytes(hex))
        #expect(try SyncMessage(decoding: Self.bytes(hex)) == m)
    }

    @Test("hex example: destroy and its answer, byte for byte (Docs/Protocol.md)")
    func hexDestroy() throws {
        let m = SyncMessage.destroy(request: 5, document: Fixture.document, epoch: 7)
        let hex = "02 10 05 0123456789abcdef fedcba9876543210 07"
        #expect(m.encoded() == Self.bytes(hex))
        #expect(try SyncMessage(decoding: Self.bytes(hex)) == m)
        let answer = SyncMessage.destroyed(request: 5, document: Fixture.document, epoch: 7)
        #expect(answer.encoded() == Self.bytes("02 11 05 0123456789abcdef fedcba9876543210 07"))
        // Code 11 is `destroyed`, 12 `compacted`; 13 is no code (malformed).
        let error = SyncMessage.error(request: 0, document: Fixture.document, code: .destroyed, text: "")
        #expect(error.encoded()[20] == 11)
        var unknown = error.encoded()
        unknown[20] = 13
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: unknown) }
    }

    @Test("hex example: rename and its answer, byte for byte (Docs/Protocol.md)")
    func hexRename() throws {
        let m = SyncMessage.rename(request: 5, document: Fixture.document, name: "hi")
        let hex = "02 12 05 0123456789abcdef fedcba9876543210 02 6869"
        #expect(m.encoded() == Self.bytes(hex))
        #expect(try SyncMessage(decoding: Self.bytes(hex)) == m)
        // The answer is a one-entry `documents` page with the request's number.
        let answer = SyncMessage.documents(request: 5, [DocumentInfo(id: Fixture.document, name: "hi", epoch: 7, operations: 3)], more: false)
        #expect(answer.encoded() == Self.bytes("02 0a 05 01 0123456789abcdef fedcba9876543210 02 6869 07 03 00"))
        // Tag 26 is no message: what an older build says of tags 18 to 25.
        var unknown = m.encoded()
        unknown[1] = 26
        #expect(throws: SyncProtocolError.malformed("unknown message type 26")) { try SyncMessage(decoding: unknown) }
        // A name over the limit is refused while decoding.
        var long = Array(m.encoded().prefix(19))
        var w = WireWriter()
        w.count(SyncMessage.maxTextBytes + 1)
        long += w.bytes + Array(repeating: 0x61, count: SyncMessage.maxTextBytes + 1)
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: long) }
    }

    @Test("hex example: an epoch-mismatch error, byte for byte (Docs/Protocol.md)")
    func hexError() throws {
        let m = SyncMessage.error(request: 0, document: Fixture.document, code: .epochMismatch, text: "re-attach")
        let hex = "02 0d 00 01 0123456789abcdef fedcba9876543210 02 09 72652d617474616368"
        #expect(m.encoded() == Self.bytes(hex))
        #expect(try SyncMessage(decoding: Self.bytes(hex)) == m)
    }

    @Test("another version, an unknown tag, an unknown error code, trailing bytes, a bad flag: typed errors")
    func refusals() {
        let good = SyncMessage.unsubscribe(document: Fixture.document).encoded()
        #expect(throws: SyncProtocolError.unsupportedVersion(1)) { try SyncMessage(decoding: [1] + good.dropFirst()) }
        for tag: UInt8 in [0, 16, 255] {
            #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: [2, tag] + good.dropFirst(2)) }
        }
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: good + [0]) }
        var error = SyncMessage.error(request: 1, document: nil, code: .limit, text: "x").encoded()
        error[4] = 99   // version, tag, request, no document, then the code
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: error) }
        var listing = SyncMessage.listDocuments(request: 1, after: nil).encoded()
        listing[3] = 2   // the presence byte of `after`
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: listing) }
        let flag = SyncMessage.statusReport(request: 1, part: [65], more: true).encoded()
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: Array(flag.dropLast()) + [2]) }
    }

    @Test("a replica twice in a version vector, a name over 64 KiB, a count over the bytes left: refused")
    func limits() {
        // hello(doc, version of two entries for replica 1)
        let twice: [UInt8] = [2, 6] + Fixture.document.bytes + [2, 1, 3, 1, 4]
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: twice) }
        let long = SyncMessage.subscribed(document: Fixture.document, name: String(repeating: "x", count: SyncMessage.maxTextBytes + 1),
                                          epoch: 1, version: VersionVector()).encoded()
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: long) }
        let atLimit = SyncMessage.subscribed(document: Fixture.document, name: String(repeating: "x", count: SyncMessage.maxTextBytes),
                                             epoch: 1, version: VersionVector())
        #expect((try? SyncMessage(decoding: atLimit.encoded())) == atLimit)
        // documents(request 1, a count of 1,000 entries, then nothing)
        let count: [UInt8] = [2, 10, 1, 0xe8, 0x07, 0]
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: count) }
    }

    @Test("an operations message whose batch does not decode is malformed, not a partial batch")
    func badBatch() {
        var frame = SyncMessage.operations(document: Fixture.document, batch: 1, operations: Fixture.typed(2).operations).encoded()
        frame.append(0)   // a byte after the batch's last record
        #expect(throws: SyncProtocolError.self) { try SyncMessage(decoding: frame) }
    }

    /// Bytes from hex digits (spaces ignored).
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.replacingOccurrences(of: " ", with: "").utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }

    @Test("a refusal in part says what the daemon took at the end of its text: still a version-2 error an older client reads; an older daemon's refusal says nothing taken; one that says it round-trips")
    func refusalSaysWhatWasTaken() throws {
        let doc = Fixture.document
        let plain = "2 operation(s) of batch 5 refused, the first: operation 7.12 is malformed: late; the others are durable and applied"
        // An older daemon's refusal: the same bytes as ever, and nothing said of what it took.
        let older = SyncMessage.error(request: 5, document: doc, code: .compacted, text: plain).encoded()
        #expect(Array(older.prefix(2)) == [2, 13])
        #expect(try SyncMessage(decoding: older) == .error(request: 5, document: doc, code: .compacted, text: plain))
        #expect(TakenInPart(text: plain) == nil && TakenInPart.stripped(plain) == plain)
        // A refusal that says it: version 2, tag 13, the addition in the text (an older client shows it).
        let taken = TakenInPart(version: Self.version, refusedFrom: VersionVector([ReplicaID(7): 12]))
        let text = taken.appended(to: plain)
        #expect(text == plain + " [taken: [1:3, 300:2]; refused from: [7:12]]")
        let message = SyncMessage.error(request: 5, document: doc, code: .compacted, text: text)
        let bytes = message.encoded()
        #expect(Array(bytes.prefix(2)) == [2, 13])
        guard case let .error(5, said?, .compacted, read) = try SyncMessage(decoding: bytes), said == doc else {
            Issue.record("not the refusal")
            return
        }
        #expect(TakenInPart(text: read) == taken && TakenInPart.stripped(read) == plain)
        #expect(taken.appended(to: text) == text, "said once")
        #expect(TakenInPart(text: TakenInPart(version: VersionVector(), refusedFrom: VersionVector()).appended(to: plain))
                == TakenInPart(version: VersionVector(), refusedFrom: VersionVector()))
        // An addition that does not read is none: the device keeps the rule of before.
        for bad in [" [taken: [1:3, 1:4]; refused from: []]", " [taken: [1:0]; refused from: []]", " [taken: [1:3]]",
                    " [taken: [x:3]; refused from: []]", " [taken: [1:3]; refused from: [2:1]"] {
            #expect(TakenInPart(text: plain + bad) == nil, "\(bad)")
            #expect(TakenInPart.stripped(plain + bad) == plain + bad)
        }
        // From the refusals themselves: the least counter refused per author.
        let fromErrors = TakenInPart(version: Self.version, refused: [
            .malformed(OpID(counter: 14, replica: ReplicaID(7)), "late"), .malformed(OpID(counter: 12, replica: ReplicaID(7)), "late"),
            .equivocation(OpID(counter: 3, replica: ReplicaID(2)))])
        #expect(fromErrors.refusedFrom == VersionVector([ReplicaID(7): 12, ReplicaID(2): 3]))
    }
}
