import Foundation
import ListSyncTestSupport
import Testing
import ListCRDT
import ListSync

/// Replays the `sync` and `daemon` libFuzzer corpora and kept crashes of Tests/Fuzz
/// (Docs/Fuzzing.md) through the same calls as their harnesses, with the same properties.
@Suite("Fuzz corpus replay: sync messages and the daemon's side of a connection")
struct FuzzCorpusReplayTests {
    static let document = DocumentID(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210)

    @Test("SyncMessage(decoding:) and back; a waiting ClientSession fed the frame")
    func syncMessages() throws {
        var waiting = ClientSession(maxFrame: 1 << 20, timeout: 1_000)
        _ = waiting.request(.status, now: 0)
        _ = waiting.subscribe(Self.document, epoch: 0, version: VersionVector(), now: 0)
        _ = waiting.send(Self.document, Fixture.typed(1).operations, now: 0)
        var decoded = 0
        let count = try replayFuzzCorpus("sync") { input in
            let bytes = input.rest()
            var client = waiting
            let actions = client.receive(bytes, now: 1)
            guard let m = try? SyncMessage(decoding: bytes) else {
                #expect(actions.count == 4 && client.isClosed && client.waitingCount == 0, "\(actions)")
                return
            }
            decoded += 1
            let closes = actions.contains { if case .close = $0 { return true }; return false }
            // Access ended (the credential revoked or expired): the session closes and fails what
            // waits; any other message that decodes never closes it (Tests/Fuzz/Harnesses/sync.swift).
            if case let .error(_, _, code, _) = m, code == .revoked || code == .expired {
                #expect(closes && client.isClosed && client.waitingCount == 0, "\(actions)")
            } else {
                #expect(!closes, "a message that decodes closed the session: \(m)")
            }
            let again = try SyncMessage(decoding: m.encoded())
            #expect(again == m)
        }
        #expect(count > 0 && decoded > 0)
    }

    @Test("ServerSession.receive over scripts of frames, driven as the daemon drives it")
    func daemonScripts() throws {
        let info = DocumentInfo(id: Self.document, name: "groceries", epoch: 7, operations: 12)
        var operations = 0, offers = 0
        let count = try replayFuzzCorpus("daemon") { input in
            var session = ServerSession(maxFrame: 1024, rateLimit: RateLimit(batchesPerSecond: 100, burst: 3), now: 0)
            for (k, frame) in Self.frames(&input).enumerated() {
                let now = UInt64(k) * 1_000_000
                let attachedBefore = session.attachedDocuments
                let actions = session.receive(frame, now: now)
                guard let message = try? SyncMessage(decoding: frame) else {
                    #expect(actions.count == 2 && session.isClosed && actions.sent.map(\.code) == [.malformed], "\(actions)")
                    break
                }
                #expect((try? SyncMessage(decoding: message.encoded())) == message)
                for action in actions {
                    switch action {
                    case .close: Issue.record("a message that decodes closed the session: \(message)")
                    case let .send(f): #expect(decoded(f)?.code != nil, "the session sends only errors")
                    case let .operations(doc, _, _):
                        operations += 1
                        #expect(attachedBefore.contains(doc))
                    case let .subscribe(doc, _, _, _): session.attached(doc)
                    case let .create(request, _, _, id, epoch):
                        #expect(session.created(request: request, document: id ?? Self.document, epoch: max(epoch, 1)).sent.count == 1)
                    case let .listDocuments(request, _):
                        let list = Array(repeating: info, count: Int(request % 20))
                        #expect(session.documents(request: request, list).sent.count == 1)
                        #expect(session.announce(info).sent.count == 1)
                    case let .status(request):
                        #expect(!session.status(request: request, json: String(repeating: "{}", count: Int(request % 700))).sent.isEmpty)
                    case let .presence(doc, _): #expect(attachedBefore.contains(doc))
                    case let .seen(doc, _, _, _): #expect(attachedBefore.contains(doc))
                    case let .stability(doc, _, _): #expect(attachedBefore.contains(doc))
                    case let .remade(doc, _): #expect(attachedBefore.contains(doc))
                    case let .floorSnapshot(doc, _):
                        offers += 1
                        #expect(attachedBefore.contains(doc))
                        #expect(session.floorRefused(doc, text: "not taken").sent.map(\.code) == [.refused])
                    case let .destroy(request, doc, epoch):
                        #expect(session.destroyed(request: request, document: doc, epoch: epoch).sent.count == 1)
                        #expect(!session.attachedDocuments.contains(doc))
                    case let .rename(request, doc, name):
                        #expect(DocumentInfo.nameProblem(name) == nil)
                        #expect(session.renamed(request: request, DocumentInfo(id: doc, name: name, epoch: 1, operations: 0)).sent.count == 1)
                    case .unsubscribe, .hello, .rateLimited: break
                    }
                }
            }
        }
        #expect(count > 0)
        #expect(operations > 0, "the corpus reaches the operations path")
        #expect(offers > 0, "the corpus reaches an offered snapshot (floorSnapshot)")
    }

    /// Frames of a script: `u16 LE length | bytes`, repeated; a short last frame takes what is left.
    static func frames(_ input: inout FuzzInput) -> [[UInt8]] {
        var out: [[UInt8]] = []
        while !input.isAtEnd { out.append(input.take(input.u16())) }
        return out
    }
}
