import Testing
@testable import ListSyncNATS

/// A transcript of every server operation, as a real server writes them.
let transcript: [UInt8] = Array((
    "INFO {\"server_id\":\"S1\",\"version\":\"2.15.1\",\"max_payload\":1048576,\"headers\":true,\"jetstream\":true}\r\n"
    + "PING\r\n" + "PONG\r\n" + "+OK\r\n"
    + "MSG a.b 7 5\r\nhello\r\n"
    + "MSG a.c 8 _INBOX.x.1 0\r\n\r\n"
    + "msg\tlower 9\t3\r\n\r\n\r\r\n"
    + "HMSG a.d 9 _INBOX.x.2 28 31\r\nNATS/1.0\r\nNats-Msg-Id: 1\r\n\r\nabc\r\n"
    + "HMSG $JS.x 3 37 37\r\nNATS/1.0 100 Idle Heartbeat\r\nA: b\r\n\r\n\r\n"
    + "-ERR 'Permissions Violation for Publish to \"x\"'\r\n"
).utf8)

let expected: [NATSServerOperation] = [
    .info("{\"server_id\":\"S1\",\"version\":\"2.15.1\",\"max_payload\":1048576,\"headers\":true,\"jetstream\":true}"),
    .ping, .pong, .ok,
    .message(NATSMessage(subject: "a.b", sid: 7, payload: Array("hello".utf8))),
    .message(NATSMessage(subject: "a.c", sid: 8, replyTo: "_INBOX.x.1", payload: [])),
    .message(NATSMessage(subject: "lower", sid: 9, payload: [13, 10, 13])),
    .message(NATSMessage(subject: "a.d", sid: 9, replyTo: "_INBOX.x.2", headers: NATSHeaders([("Nats-Msg-Id", "1")]), payload: Array("abc".utf8))),
    .message(NATSMessage(subject: "$JS.x", sid: 3, headers: {
        var h = NATSHeaders([("A", "b")]); h.status = 100; h.statusDescription = "Idle Heartbeat"; return h
    }(), payload: [])),
    .error("Permissions Violation for Publish to \"x\""),
]

@Suite struct NATSParserTests {
    @Test func wholeTranscriptInOneFeed() throws {
        var p = NATSParser()
        #expect(try p.feed(transcript) == expected)
        #expect(p.buffered == 0)
    }

    @Test func oneByteAtATimeGivesTheSameOperations() throws {
        var p = NATSParser()
        var out: [NATSServerOperation] = []
        for b in transcript { out += try p.feed([b]) }
        #expect(out == expected)
        #expect(p.buffered == 0)
    }

    @Test func everySplitInTwoGivesTheSameOperations() throws {
        for cut in 0...transcript.count {
            var p = NATSParser()
            let out = try p.feed(transcript[..<cut]) + p.feed(transcript[cut...])
            #expect(out == expected, "cut at \(cut)")
        }
    }

    @Test func malformedInputIsATypedErrorAndTheParserStaysFailed() throws {
        let cases: [(String, NATSProtocolError)] = [
            ("HELLO\r\n", .unknownOperation("HELLO")),
            ("MSG a\r\n", .malformedArguments(operation: "MSG", line: "MSG a")),
            ("MSG a x 3\r\n", .malformedArguments(operation: "MSG", line: "MSG a x 3")),
            ("MSG a 1 -3\r\n", .malformedArguments(operation: "MSG", line: "MSG a 1 -3")),
            ("MSG a 1 3\r\nabcde", .missingPayloadTerminator),
            ("HMSG a 1 5 3\r\n", .malformedArguments(operation: "HMSG", line: "HMSG a 1 5 3")),
            ("HMSG a 1 4 4\r\nabcd\r\n", .malformedHeaders("block does not end with an empty line")),
            ("HMSG a 1 12 12\r\nHTTP/1.0\r\n\r\n\r\n", .malformedHeaders("no NATS/1.0 version line")),
            ("HMSG a 1 21 21\r\nNATS/1.0\r\nnocolon\r\n\r\n\r\n", .malformedHeaders("field line 'nocolon' has no name or colon")),
            ("HMSG a 1 16 16\r\nNATS/1.0 abc\r\n\r\n\r\n", .malformedHeaders("status 'abc' is not a 3-digit code")),
            ("MSG a 1 99999999999\r\n", .payloadTooLarge(size: 99_999_999_999, limit: 8 << 20)),
            ("INFO\r\n", .malformedArguments(operation: "INFO", line: "INFO")),
            ("\u{FF}\r\n", .unknownOperation("Ÿ")),
        ]
        for (text, error) in cases {
            var p = NATSParser()
            #expect(throws: error, "\(text.debugDescription)") { _ = try p.feed(Array(text.utf8)) }
            // Failed for good: even a valid operation is refused now.
            #expect(throws: error) { _ = try p.feed(Array("PING\r\n".utf8)) }
        }
        var p = NATSParser()
        #expect(throws: NATSProtocolError.notText) { _ = try p.feed([0x4D, 0xC3, 0x28, 13, 10]) }
    }

    @Test func aControlLineWithoutItsEndIsBounded() throws {
        var p = NATSParser(maxControlLine: 64)
        #expect(throws: NATSProtocolError.controlLineTooLong(limit: 64)) {
            for _ in 0..<100 { _ = try p.feed(Array("x".utf8)) }
        }
        var q = NATSParser(maxControlLine: 64)
        #expect(try q.feed(Array(repeating: UInt8(ascii: " "), count: 60)) == [])
        #expect(q.buffered == 60)
    }

    @Test func headersRoundTripAndRefuseInjection() throws {
        var h = NATSHeaders([("Nats-Msg-Id", "abc"), ("X-Tag", "v: w")])
        #expect(try NATSHeaders(parsing: h.encoded()) == h)
        h.status = 503
        h.statusDescription = "No Responders"
        #expect(try NATSHeaders(parsing: h.encoded()) == h)
        #expect(h["nats-msg-id"] == "abc")
        #expect(throws: NATSProtocolError.self) { try NATSHeaders([("A", "x\r\nB: y")]).encoded() }
        #expect(throws: NATSProtocolError.self) { try NATSHeaders([("A B", "x")]).encoded() }
        #expect(throws: NATSProtocolError.self) { try NATSHeaders([("", "x")]).encoded() }
    }

    @Test func commandsEncodeAndRefuseSubjectsThatWouldChangeTheLine() throws {
        #expect(try NATSCommand.publish("a.b", payload: Array("hi".utf8)) == Array("PUB a.b 2\r\nhi\r\n".utf8))
        #expect(try NATSCommand.publish("a.b", replyTo: "r.1", payload: []) == Array("PUB a.b r.1 0\r\n\r\n".utf8))
        let h = NATSHeaders([("K", "v")])
        let hb = try h.encoded()
        #expect(try NATSCommand.publish("a", headers: h, payload: [1]) == Array("HPUB a \(hb.count) \(hb.count + 1)\r\n".utf8) + hb + [1, 13, 10])
        #expect(try NATSCommand.subscribe("a.*.>", sid: 4) == Array("SUB a.*.> 4\r\n".utf8))
        #expect(try NATSCommand.subscribe("a", queue: "q", sid: 4) == Array("SUB a q 4\r\n".utf8))
        #expect(NATSCommand.unsubscribe(sid: 4, after: 1) == Array("UNSUB 4 1\r\n".utf8))
        for bad in ["", "a b", "a..b", ".a", "a.", "a\r\nPUB x 1", "a.*", "a.>"] {
            #expect(throws: NATSProtocolError.self, "\(bad.debugDescription)") { try NATSCommand.publish(bad, payload: []) }
        }
        for bad in ["a.>.b", "a.b*", "a b"] {
            #expect(throws: NATSProtocolError.self) { try NATSCommand.subscribe(bad, sid: 1) }
        }
        #expect(throws: NATSProtocolError.self) { try NATSCommand.subscribe("a", queue: "q r", sid: 1) }
        let connect = String(decoding: NATSCommand.connect(name: "n"), as: UTF8.self)
        #expect(connect.hasPrefix("CONNECT {") && connect.hasSuffix("}\r\n") && connect.contains("\"headers\":true"))
    }

    @Test func serverAddressesParse() {
        #expect(NATSServerAddress(parsing: "nats://127.0.0.2:4223") == NATSServerAddress(host: "127.0.0.2", port: 4223))
        #expect(NATSServerAddress(parsing: "localhost") == NATSServerAddress(host: "localhost", port: 4222))
        #expect(NATSServerAddress(parsing: "[::1]:5") == NATSServerAddress(host: "::1", port: 5))
        #expect(NATSServerAddress.list("nats://a:1, b:2")?.count == 2)
        for bad in ["", "nats://", "a:0", "a:x", "a:70000", "u@a:1", "a/b", "[::1"] {
            #expect(NATSServerAddress(parsing: bad) == nil, "\(bad)")
        }
        #expect(NATSServerAddress.list("a:1,b:x") == nil)
    }
}
