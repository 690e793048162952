import Testing
@testable import ListSyncNATS

private let info = "INFO {\"server_id\":\"S\",\"version\":\"2.15.1\",\"max_payload\":1048576,\"headers\":true}\r\n"

private func writes(_ actions: [NATSClientMachine.Action]) -> String {
    actions.map { a -> String in if case let .write(b) = a { String(decoding: b, as: UTF8.self) } else { "" } }.joined()
}

private func connected() -> NATSClientMachine {
    var m = NATSClientMachine(name: "t")
    _ = m.receive(Array(info.utf8))
    _ = m.receive(Array("PONG\r\n".utf8))
    precondition(m.isConnected)
    return m
}

@Suite struct NATSClientMachineTests {
    @Test func handshakeByteByByte() {
        var m = NATSClientMachine(name: "t")
        var actions: [NATSClientMachine.Action] = []
        for b in Array((info + "PONG\r\n").utf8) { actions += m.receive([b]) }
        let w = writes(actions)
        #expect(w.hasPrefix("CONNECT {") && w.hasSuffix("}\r\nPING\r\n"))
        guard case let .connected(i)? = actions.last else {
            Issue.record("no connected action: \(actions)")
            return
        }
        #expect(i.serverID == "S" && i.headers && i.maxPayload == 1_048_576)
        #expect(m.isConnected)
    }

    @Test func serverPingIsAnsweredAndMessagesDelivered() {
        var m = connected()
        #expect(m.receive(Array("PING\r\n".utf8)) == [.write(NATSCommand.pong)])
        #expect(m.receive(Array("MSG s 1 2\r\nok\r\n".utf8)) == [.deliver(NATSMessage(subject: "s", sid: 1, payload: Array("ok".utf8)))])
    }

    @Test func pongsGoToTheDriversPingsInOrderNotToKeepAlives() {
        var m = connected()
        #expect(writes(m.keepAliveTick()) == "PING\r\n")
        #expect(writes(m.ping()) == "PING\r\n")
        #expect(m.receive(Array("PONG\r\n".utf8)) == [])         // the keep-alive's
        #expect(m.receive(Array("PONG\r\n".utf8)) == [.pong])    // the driver's
        #expect(m.receive(Array("PONG\r\n".utf8)) == [])         // nobody's
    }

    @Test func staleConnectionClosesAfterUnansweredPings() {
        var m = NATSClientMachine(name: "t", maxOutstandingPings: 2)
        _ = m.receive(Array(info.utf8))
        _ = m.receive(Array("PONG\r\n".utf8))
        #expect(writes(m.keepAliveTick()) == "PING\r\n")
        #expect(writes(m.keepAliveTick()) == "PING\r\n")
        guard case .close? = m.keepAliveTick().first else {
            Issue.record("not closed as stale")
            return
        }
        #expect(m.isClosed)
        #expect(m.receive(Array("PING\r\n".utf8)) == [])
    }

    @Test func badServersAreClosedNotCrashedOn() {
        for bad in ["PONG\r\n", "MSG a 1 0\r\n\r\n", "INFO nope\r\n", "GARBAGE\r\n", info + "MSG a 1 0\r\n\r\n", info + "-ERR 'Authorization Violation'\r\n"] {
            var m = NATSClientMachine(name: "t")
            let actions = m.receive(Array(bad.utf8))
            guard case .close? = actions.last else {
                Issue.record("\(bad.debugDescription): \(actions)")
                continue
            }
            #expect(m.isClosed)
            #expect(m.receive(Array("PING\r\n".utf8)) == [])
        }
        var m = connected()
        #expect(m.receive(Array("-ERR 'Permissions Violation for Subscription to \"x\"'\r\n".utf8))
                == [.serverError("Permissions Violation for Subscription to \"x\"")])
        #expect(m.isConnected)
    }
}

@Suite struct OrderedConsumerReplyTests {
    @Test func sequencesComeFromBothAckSubjectLayouts() {
        // v1: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
        #expect(OrderedConsumer.sequences("$JS.ACK.S.C.1.42.7.1700000000.0")! == (42, 7))
        // v2: $JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>.<token>
        #expect(OrderedConsumer.sequences("$JS.ACK._.ACC.S.C.1.42.7.1700000000.0.tok")! == (42, 7))
        #expect(OrderedConsumer.sequences("$JS.ACK._.ACC.S.C.1.42.7.1700000000.0")! == (42, 7))
        for bad in ["", "_INBOX.x.1", "$JS.ACK.S.C.1.x.7.1.0", "$JS.ACK.S.C", "$JS.NAK.S.C.1.42.7.1.0"] {
            #expect(OrderedConsumer.sequences(bad) == nil, "\(bad)")
        }
    }
}
