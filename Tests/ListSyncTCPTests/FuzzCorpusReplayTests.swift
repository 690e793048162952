import Foundation
import ListSyncTestSupport
import Testing
@testable import ListSyncTCP

/// Replays the `tcp` libFuzzer corpus and kept crashes of Tests/Fuzz (Docs/Fuzzing.md), read as
/// Tests/Fuzz/Harnesses/tcp.swift reads them: `mode | n | n piece sizes | stream or script`.
@Suite("Fuzz corpus replay: frames and the handshake")
struct FuzzCorpusReplayTests {
    static let key: [UInt8] = Array(0..<32)
    static func client() -> ConnectionMachine {
        ConnectionMachine(role: .client, key: key, id: Array(repeating: 0xc1, count: 16), nonce: Array(repeating: 0xc2, count: 32))
    }
    static func server() -> ConnectionMachine {
        ConnectionMachine(role: .server, key: key, id: Array(repeating: 0x51, count: 16), nonce: Array(repeating: 0x52, count: 32))
    }

    @Test("FrameDecoder and ConnectionMachine (server, client, established)")
    func frames() throws {
        let count = try replayFuzzCorpus("tcp") { r in
            let mode = r.byte() % 4
            let sizes = r.take(Int(r.byte() % 8))
            switch mode {
            case 0:
                let limit = r.u16() + 1
                var decoder = FrameDecoder(limit: limit)
                pieces: for piece in split(r.rest(), by: sizes) {
                    decoder.append(piece)
                    do { while try decoder.next() != nil {} } catch { break pieces }
                }
            case 1, 2:
                var m = mode == 1 ? Self.server() : Self.client()
                _ = m.start()
                for piece in split(r.rest(), by: sizes) { _ = m.receive(piece) }
            default:
                var pair = MachinePair(client: Self.client(), server: Self.server())
                #expect(pair.bothEstablished)
                while !r.isAtEnd {
                    let op = r.byte()
                    let toClient = op & 1 == 1
                    var wire: [UInt8]
                    if op & 2 == 0 {
                        let type = MessageType(rawValue: r.byte()) ?? .data
                        let payload = r.take(Int(r.byte()))
                        guard let sealed = toClient ? try? pair.server.seal(type, payload) : try? pair.client.seal(type, payload)
                        else { continue }
                        wire = sealed
                    } else {
                        wire = r.take(Int(r.byte()))
                    }
                    for piece in split(wire, by: sizes) {
                        if toClient {
                            for case let .write(w) in pair.client.receive(piece) { _ = pair.server.receive(w) }
                        } else {
                            for case let .write(w) in pair.server.receive(piece) { _ = pair.client.receive(w) }
                        }
                    }
                }
            }
        }
        #expect(count > 0)
    }
}

extension MachinePair {
    /// Two given machines, handshake done in one piece each way.
    init(client: ConnectionMachine, server: ConnectionMachine) {
        self.client = client
        self.server = server
        route(client: self.client.start())
        pump(piece: { _ in Int.max })
    }
}
