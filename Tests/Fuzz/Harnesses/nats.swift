// The NATS client protocol (Sources/ListSyncNATS): NATSParser and NATSClientMachine.
//
// Input: `mode | n | n piece sizes | stream`.
//   0: NATSParser (control lines up to 256 bytes, payloads up to 4,096): the stream cut into the
//      pieces gives exactly the operations, or the error, of the whole stream in one piece; after
//      an error every feed throws the same error; the parser never holds more than one operation.
//   1: NATSClientMachine fed the stream in the pieces; 2: the same after a real handshake (INFO,
//      PONG), so the fuzzer mutates the connected state. A machine that closed says nothing more;
//      every delivered message's headers, encoded again, parse back to the same headers.
@testable import ListSyncNATS

let handshakeBytes: [UInt8] = Array("INFO {\"server_id\":\"S\",\"headers\":true}\r\nPONG\r\n".utf8)

func checkParser(_ stream: [UInt8], _ sizes: [UInt8]) {
    var whole = NATSParser(maxControlLine: 256, maxPayload: 4_096)
    var wholeOps: [NATSServerOperation] = []
    var wholeError: NATSProtocolError?
    do { wholeOps = try whole.feed(stream) } catch { wholeError = error }
    var parts = NATSParser(maxControlLine: 256, maxPayload: 4_096)
    var partOps: [NATSServerOperation] = []
    var partError: NATSProtocolError?
    for piece in split(stream, by: sizes) {
        do { partOps += try parts.feed(piece) } catch { partError = error; break }
        if parts.buffered > 256 + 2 + 4_096 + 2 { fuzzFailure("parser holds \(parts.buffered) bytes") }
    }
    if wholeError != partError { fuzzFailure("split gives error \(String(describing: partError)), whole \(String(describing: wholeError))") }
    if wholeError == nil && wholeOps != partOps { fuzzFailure("split gives other operations") }
    if let e = partError {
        do { _ = try parts.feed(Array("PING\r\n".utf8)); fuzzFailure("a failed parser took more") } catch {
            if error != e { fuzzFailure("a failed parser changed its error") }
        }
    }
}

func checkMachine(_ stream: [UInt8], _ sizes: [UInt8], connected: Bool) {
    var m = NATSClientMachine(name: "fuzz")
    if connected {
        _ = m.receive(handshakeBytes)
        if !m.isConnected { fuzzFailure("the fixed handshake did not connect") }
    }
    var closed = false
    for piece in split(stream, by: sizes) {
        let actions = m.receive(piece)
        if closed && !actions.isEmpty { fuzzFailure("a closed machine acted") }
        for a in actions {
            switch a {
            case .close: closed = true
            case let .deliver(msg):
                if let h = msg.headers, let bytes = try? h.encoded() {
                    guard let back = try? NATSHeaders(parsing: bytes), back == h else { fuzzFailure("headers do not round-trip") }
                }
            default: break
            }
        }
        if closed != m.isClosed { fuzzFailure("close action and isClosed disagree") }
    }
}

func fuzzOne(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    let mode = input.byte() % 3
    let sizes = input.take(Int(input.byte() % 8))
    let stream = input.rest()
    switch mode {
    case 0: checkParser(stream, sizes)
    case 1: checkMachine(stream, sizes, connected: false)
    default: checkMachine(stream, sizes, connected: true)
    }
}

func fuzzSeeds() -> [[UInt8]] {
    let ops = Array((
        "PING\r\nPONG\r\n+OK\r\nMSG a.b 7 5\r\nhello\r\nMSG a.c 8 _INBOX.x.1 0\r\n\r\n"
        + "HMSG a.d 9 _INBOX.x.2 28 31\r\nNATS/1.0\r\nNats-Msg-Id: 1\r\n\r\nabc\r\n"
        + "HMSG $JS.x 3 37 37\r\nNATS/1.0 100 Idle Heartbeat\r\nA: b\r\n\r\n\r\n"
        + "-ERR 'Permissions Violation for Publish to \"x\"'\r\n-ERR 'Stale Connection'\r\n"
    ).utf8)
    return [[0, 0] + handshakeBytes + ops, [0, 2, 0, 6] + handshakeBytes + ops, [1, 0] + handshakeBytes + ops,
            [2, 1, 3] + ops, [2, 0] + Array("MSG a 1 3\r\nabcde".utf8)]
}
