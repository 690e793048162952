import Foundation
import ListSyncTestSupport
import Testing
@testable import ListSyncNATS

/// Replays the `nats` libFuzzer corpus and kept crashes of Tests/Fuzz (Docs/Fuzzing.md), read as
/// Tests/Fuzz/Harnesses/nats.swift reads them: `mode | n | n piece sizes | stream`, with the same
/// properties (any split gives the operations or the error of one piece; a closed machine is silent).
@Suite("Fuzz corpus replay: the NATS client protocol")
struct FuzzCorpusReplayTests {
    @Test func natsParserAndClientMachine() throws {
        let handshake = Array("INFO {\"server_id\":\"S\",\"headers\":true}\r\nPONG\r\n".utf8)
        let count = try replayFuzzCorpus("nats") { input in
            guard !input.isAtEnd else { return }
            let mode = input.byte() % 3
            let sizes = input.take(Int(input.byte() % 8))
            let stream = input.rest()
            if mode == 0 {
                var whole = NATSParser(maxControlLine: 256, maxPayload: 4_096), parts = whole
                let wholeResult = Result { () throws(NATSProtocolError) in try whole.feed(stream) }
                var ops: [NATSServerOperation] = []
                var error: NATSProtocolError?
                for piece in split(stream, by: sizes) {
                    do throws(NATSProtocolError) { ops += try parts.feed(piece) } catch let e { error = e; break }
                }
                switch wholeResult {
                case let .success(w): #expect(error == nil && ops == w)
                case let .failure(e): #expect(error == e)
                }
            } else {
                var m = NATSClientMachine(name: "replay")
                if mode == 2 { _ = m.receive(handshake) }
                var closed = false
                for piece in split(stream, by: sizes) {
                    let actions = m.receive(piece)
                    #expect(!closed || actions.isEmpty)
                    if actions.contains(where: { if case .close = $0 { true } else { false } }) { closed = true }
                    #expect(closed == m.isClosed)
                }
            }
        }
        #expect(count > 0)
    }
}
