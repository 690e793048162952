import Foundation
import Testing
import ListCRDT
import ListSyncTestSupport
@testable @_spi(Testing) import ListSync

/// The daemon's core and a client's edit of an operation its copy counts but never holds
/// (`DocumentCore+Admission.swift`, `refuseUnheldNames`; Docs/Semantics.md §7, "An edit of an
/// original the copy counts"), with no socket: refused as made before the floor (`compacted`,
/// so that its author re-syncs), with what waits on it in its batch; with
/// `DocumentCore.Variant.refusesUnheldNamesAsMalformed`, as before, `refused` and the rest of
/// the batch waiting for ever.
@Suite struct UnheldNameAdmissionTests {
    static let device = SubscriberID(3)
    static let link = SubscriberID(8)

    /// X's core (the fixture's copy that counts 4@3 without holding it), and the device's batch:
    /// its edit of the original, then two inserts made after it.
    static func batch(variant: DocumentCore.Variant = .correct) throws -> (core: DocumentCore, ops: [ListOperation]) {
        let (x, _, edit, device) = try UnheldNameFixture.gap()
        var core = DocumentCore(id: PeerMergeBackTests.doc, name: "n", epoch: 7, document: x)
        core.variant = variant
        _ = core.subscribe(Self.device, epoch: 7, version: x.version)
        var d = device
        let second = try d.insertItem(at: IndexPath(item: 0, section: 0), value: Data("second".utf8))
        let third = try d.insertItem(at: IndexPath(item: 0, section: 0), value: Data("third".utf8))
        return (core, [edit, second, third])
    }

    static func code(_ message: SyncMessage?) -> SyncErrorCode? {
        if case let .error(_, _, code, _)? = message { code } else { nil }
    }

    @Test("an edit of an operation the copy counts but does not hold is refused as compacted, and the batch's operations that wait on it too: nothing waits, nothing is applied; with refusesUnheldNamesAsMalformed it is refused and the others wait for ever")
    func refusedForTheFloor() throws {
        var (core, ops) = try Self.batch()
        let shown = core.document.snapshot()
        let answer = PeerMergeBackTests.answer(PeerMergeBackTests.send(ops, from: Self.device, to: &core), to: Self.device)
        #expect(Self.code(answer) == .compacted, "\(String(describing: answer))")
        if case let .error(_, _, _, text)? = answer {
            #expect(text.contains("3 operation(s)") && text.contains("it edits 4@3"), "\(text)")
        }
        #expect(core.document.pendingCount == 0, "nothing of the batch waits")
        #expect(core.document.snapshot() == shown)
        // The device re-syncs and makes them again under the refused counters: taken.
        var remade = try ListDocument(snapshot: core.document.encodedSnapshot(), replica: ReplicaID(4))
        let again = try remade.insertItem(at: IndexPath(item: 0, section: 0), value: Data("second".utf8))
        let taken = PeerMergeBackTests.answer(PeerMergeBackTests.send([again], from: Self.device, to: &core, batch: 6), to: Self.device)
        guard case .ack? = taken else { throw PeerMergeBackTests.Failure("made again: \(String(describing: taken))") }

        var (old, oldOps) = try Self.batch(variant: .refusesUnheldNamesAsMalformed)
        let before = PeerMergeBackTests.answer(PeerMergeBackTests.send(oldOps, from: Self.device, to: &old), to: Self.device)
        #expect(Self.code(before) == .refused)
        #expect(old.document.pendingCount == 2, "without the rule the batch's later operations wait for ever")
    }

    @Test("an operation malformed for another reason is refused as before; so is an edit of the original relayed by a peer link (its first daemon judged it); a waiting operation of another batch stays")
    func narrow() throws {
        var (core, ops) = try Self.batch()
        // Replica 8 names an item nobody made and that the version does not count.
        let forged = ListOperation(id: OpID(counter: 20, replica: ReplicaID(8)), deps: core.document.frontier,
                                   kind: .setItemValue(ItemID(OpID(counter: 30, replica: ReplicaID(8))), Data("x".utf8)))
        let answer = PeerMergeBackTests.answer(PeerMergeBackTests.send([forged], from: Self.device, to: &core), to: Self.device)
        #expect(Self.code(answer) == .refused, "\(String(describing: answer))")
        _ = core.subscribe(Self.link, epoch: 7, version: core.document.version)
        core.markRelay(Self.link)
        let relayed = PeerMergeBackTests.answer(PeerMergeBackTests.send([ops[0]], from: Self.link, to: &core, batch: 8), to: Self.link)
        #expect(Self.code(relayed) == .refused, "\(String(describing: relayed))")
        // The device's later insert sent ahead, alone: it waits for the edit; then the edit,
        // alone, is refused for the floor, and the insert of the other batch stays waiting.
        _ = PeerMergeBackTests.send([ops[1]], from: Self.device, to: &core, batch: 6)
        #expect(core.document.pendingCount == 1)
        let edit = PeerMergeBackTests.answer(PeerMergeBackTests.send([ops[0]], from: Self.device, to: &core, batch: 10), to: Self.device)
        #expect(Self.code(edit) == .compacted, "\(String(describing: edit))")
        #expect(core.document.pendingCount == 1, "another batch's waiting operation is not taken out")
    }
}
