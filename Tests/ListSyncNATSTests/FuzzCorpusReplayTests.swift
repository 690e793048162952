import Foundation
import ListSyncTestSupport
import Testing
@testable import ListSyncNATS

/// Replays the `nats` libFuzzer corpus and kept crashes of Tests/Fuzz (Docs/Fuzzing.md), read as
/// Tests/Fuzz/Harnesses/nats.swift reads them: `mode | n | n piece sizes | stream`, with the same
/// properties (any split gives the operations or the error of one piece; a closed machine is silent).
@Suite("Fuzz corpus replay: the NATS client protocol")
struct FuzzCorpusReplayTests {
    @Test func natsParserAndClientMachine() {
        let inputs = fuzzInputs("nats")
        #expect(!inputs.isEmpty)
        let handshake = Array("INFO {\"server_id\":\"S\",\"headers\":true}\r\nPONG\r\n".utf8)
        for bytes in inputs {
            guard let mode = bytes.first.map({ $0 % 3 }) else { continue }
            let n = bytes.count > 1 ? Int(bytes[1] % 8) : 0
            let sizes = Array(bytes.dropFirst(2).prefix(n))
            let stream = Array(bytes.dropFirst(2 + n))
            if mode == 0 {
                var whole = NATSParser(maxControlLine: 256, maxPayload: 4_096), parts = whole
                let wholeResult = Result { () throws(NATSProtocolError) in try whole.feed(stream) }
                var ops: [NATSServerOperation] = []
                var error: NATSProtocolError?
                for piece in split(stream, sizes) {
                    do { ops += try parts.feed(piece) } catch let e { error = e; break }
                }
                switch wholeResult {
                case let .success(w): #expect(error == nil && ops == w)
                case let .failure(e): #expect(error == e)
                }
            } else {
                var m = NATSClientMachine(name: "replay")
                if mode == 2 { _ = m.receive(handshake) }
                var closed = false
                for piece in split(stream, sizes) {
                    let actions = m.receive(piece)
                    #expect(!closed || actions.isEmpty)
                    if actions.contains(where: { if case .close = $0 { true } else { false } }) { closed = true }
                    #expect(closed == m.isClosed)
                }
            }
        }
    }
}
