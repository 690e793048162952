// Frames and the handshake: FrameDecoder and ConnectionMachine (Docs/Transport.md), both internal
// to ListSyncTCP (reached with @testable import: the modules are built with -enable-testing).
//
// The first byte picks a mode; the next few bytes give the sizes of the pieces the stream is cut
// into (so every split of the same bytes is tried), the rest is the stream.
//   0: FrameDecoder with a limit from the input: pieces in any split give exactly the frames (and
//      the error) of the whole stream in one piece; the decoder never buffers past limit + 4.
//   1: a server-role machine fed the stream (a real client's transcript is a seed: ids, nonces
//      and the key are fixed, so a valid handshake replays and the fuzzer mutates past it).
//   2: a client-role machine, after start(), fed the stream (a real server's transcript is a seed).
//   3: a real handshake between a client and a server, then a script from the input: frames
//      sealed by the genuine peer (any type, any payload), raw bytes, in either direction; the
//      established state's paths (DATA, PING, BYE, a wrong type, a forged or replayed frame).
// For modes 1–3: a closed machine stays closed and says nothing more; no crash.
@testable import ListSyncTCP

let fuzzKey: [UInt8] = Array(0..<32)
let clientID: [UInt8] = Array(repeating: 0xc1, count: 16), clientNonce: [UInt8] = Array(repeating: 0xc2, count: 32)
let serverID: [UInt8] = Array(repeating: 0x51, count: 16), serverNonce: [UInt8] = Array(repeating: 0x52, count: 32)

func makeClient() -> ConnectionMachine { ConnectionMachine(role: .client, key: fuzzKey, id: clientID, nonce: clientNonce) }
func makeServer() -> ConnectionMachine { ConnectionMachine(role: .server, key: fuzzKey, id: serverID, nonce: serverNonce) }

func writes(_ actions: [ConnectionMachine.Action]) -> [UInt8] {
    actions.flatMap { a -> [UInt8] in if case let .write(b) = a { return b } else { return [] } }
}

/// A full handshake between the two fixed machines: both established, and each side's bytes.
func handshake() -> (client: ConnectionMachine, server: ConnectionMachine, clientBytes: [UInt8], serverBytes: [UInt8]) {
    var client = makeClient(), server = makeServer()
    var clientBytes = writes(client.start()), serverBytes: [UInt8] = []
    var toServer = clientBytes, toClient: [UInt8] = []
    while !toServer.isEmpty || !toClient.isEmpty {
        let s = writes(server.receive(toServer)); toServer = []
        serverBytes += s; toClient += s
        let c = writes(client.receive(toClient)); toClient = []
        clientBytes += c; toServer += c
    }
    guard client.isEstablished, server.isEstablished else { fuzzFailure("the fixed handshake did not complete") }
    return (client, server, clientBytes, serverBytes)
}

/// The handshake is deterministic: run it once, copy the machines (values) for every input.
let established = handshake()

func fuzzSeeds() -> [[UInt8]] {
    var (client, server, clientBytes, serverBytes) = established
    for payload in [[UInt8]("hello".utf8), [], Array(repeating: 7, count: 40)] {
        clientBytes += (try? client.seal(.data, payload)) ?? []
        serverBytes += (try? server.seal(.data, payload)) ?? []
    }
    clientBytes += (try? client.seal(.ping, [])) ?? []
    clientBytes += (try? client.seal(.bye, Array("done".utf8))) ?? []
    let frames = ConnectionMachine.frame([1, 2, 3]) + ConnectionMachine.frame([4]) + [0, 0, 0, 9, 1]
    return [
        [0, 0] + [0x00, 0x10] + frames,                 // mode 0, one piece, limit 16
        [0, 3, 0, 1, 4] + [0x00, 0x02] + frames,       // mode 0, pieces of 1, 2 and 5 bytes, limit 2
        [1, 0] + clientBytes,                          // mode 1, the client's whole transcript
        [1, 2, 3, 60] + clientBytes,                   // mode 1, in pieces of 4 and 61
        [2, 0] + serverBytes,                          // mode 2, the server's whole transcript
        // mode 3: to server, DATA "hi"; to client, PING; to server, raw bytes; to client, BYE.
        [3, 0] + [0x00, 17, 2] + Array("hi".utf8) + [0x01, 18, 0] + [0x02, 3, 0, 0, 0] + [0x01, 20, 1, 0x21],
    ]
}

func fuzzOne(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    let mode = input.byte() % 4
    let sizes = input.take(Int(input.byte() % 8))
    switch mode {
    case 0:
        let limit = input.u16() + 1
        frameDecoder(limit: limit, stream: input.rest(), sizes: sizes)
    case 1:
        var server = makeServer()
        feed(&server, input.rest(), sizes: sizes)
    case 2:
        var client = makeClient()
        _ = client.start()
        feed(&client, input.rest(), sizes: sizes)
    default:
        script(&input, sizes: sizes)
    }
}

func frameDecoder(limit: Int, stream: [UInt8], sizes: [UInt8]) {
    func run(_ pieces: [ArraySlice<UInt8>]) -> (frames: [FrameDecoder.Frame], error: FrameError?) {
        var decoder = FrameDecoder(limit: limit)
        var frames: [FrameDecoder.Frame] = []
        for piece in pieces {
            decoder.append(piece)
            do {
                while let f = try decoder.next() {
                    guard f.body.count >= 1, f.body.count <= limit, f.header == FrameDecoder.header(f.body.count) else {
                        fuzzFailure("a frame of \(f.body.count) bytes under limit \(limit)")
                    }
                    frames.append(f)
                }
            } catch {
                return (frames, error)
            }
            guard decoder.buffered <= limit + 4 else { fuzzFailure("buffered \(decoder.buffered) bytes, limit \(limit)") }
        }
        return (frames, nil)
    }
    let whole = run([stream[...]])
    let pieces = run(split(stream, by: sizes))
    guard whole.frames == pieces.frames, whole.error == pieces.error else {
        fuzzFailure("splitting the stream changed the frames or the error")
    }
}

func feed(_ machine: inout ConnectionMachine, _ stream: [UInt8], sizes: [UInt8]) {
    for piece in split(stream, by: sizes) {
        let wasClosed = machine.isClosed
        let actions = machine.receive(piece)
        if wasClosed, !actions.isEmpty { fuzzFailure("a closed machine acted: \(actions)") }
    }
}

/// Mode 3's script: repeated `op | ...` where op's low bit is the direction (0: to the server,
/// 1: to the client) and bit 1 says sealed (`type u8 | length u8 | payload`) or raw
/// (`length u8 | bytes`).
func script(_ input: inout FuzzInput, sizes: [UInt8]) {
    var (client, server, _, _) = established
    while !input.isAtEnd {
        let op = input.byte()
        let toClient = op & 1 == 1
        var bytes: [UInt8]
        if op & 2 == 0 {
            let rawType = input.byte()
            let payload = input.take(Int(input.byte()))
            // A type the enum lacks is sealed as DATA with the raw type in front: still a frame the
            // genuine peer could not send, reached through the raw path below.
            let type = MessageType(rawValue: rawType) ?? .data
            let sender = toClient ? server : client
            var s = sender
            guard let sealed = try? s.seal(type, payload) else { continue }
            if toClient { server = s } else { client = s }
            bytes = sealed
        } else {
            bytes = input.take(Int(input.byte()))
        }
        if toClient {
            let wasClosed = client.isClosed
            for piece in split(bytes, by: sizes) {
                let actions = client.receive(piece)
                if wasClosed, !actions.isEmpty { fuzzFailure("a closed client acted") }
                for a in actions { if case let .write(w) = a { _ = server.receive(w) } }
            }
        } else {
            let wasClosed = server.isClosed
            for piece in split(bytes, by: sizes) {
                let actions = server.receive(piece)
                if wasClosed, !actions.isEmpty { fuzzFailure("a closed server acted") }
                for a in actions { if case let .write(w) = a { _ = client.receive(w) } }
            }
        }
    }
}
