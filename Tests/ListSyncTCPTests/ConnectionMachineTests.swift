import Testing
import ListSync
@testable import ListSyncTCP
import ListSyncRandom

/// Two machines wired together with no socket: bytes move between them in chosen pieces.
struct MachinePair {
    var client: ConnectionMachine
    var server: ConnectionMachine
    var toServer: [UInt8] = []
    var toClient: [UInt8] = []
    var clientEvents: [ConnectionMachine.Action] = []
    var serverEvents: [ConnectionMachine.Action] = []
    /// Every byte the client wrote, in order (for replay attacks).
    var clientWire: [UInt8] = []

    init(seed: UInt64, clientKey: [UInt8] = MachinePair.key, serverKey: [UInt8] = MachinePair.key,
         clientVersions: ClosedRange<UInt16> = 1...1, claims: [UInt8]? = nil) {
        var rng = SplitMix64(seed: seed)
        client = ConnectionMachine(role: .client, key: clientKey, claims: claims, id: rng.bytes(16), nonce: rng.bytes(32),
                                   versions: clientVersions)
        server = ConnectionMachine(role: .server, key: serverKey, id: rng.bytes(16), nonce: rng.bytes(32))
        route(client: client.start())
    }

    static let key: [UInt8] = Array(0..<32)

    mutating func route(client actions: [ConnectionMachine.Action]) {
        for a in actions {
            if case let .write(b) = a { toServer += b; clientWire += b } else { clientEvents.append(a) }
        }
    }

    mutating func route(server actions: [ConnectionMachine.Action]) {
        for a in actions {
            if case let .write(b) = a { toClient += b } else { serverEvents.append(a) }
        }
    }

    /// Moves every queued byte across, `piece` bytes per call, until both directions are quiet.
    mutating func pump(piece: (inout SplitMix64) -> Int, seed: UInt64 = 1) {
        var rng = SplitMix64(seed: seed)
        while !toServer.isEmpty || !toClient.isEmpty {
            if !toServer.isEmpty {
                let n = min(toServer.count, piece(&rng))
                let chunk = Array(toServer.prefix(n))
                toServer.removeFirst(n)
                route(server: server.receive(chunk))
            }
            if !toClient.isEmpty {
                let n = min(toClient.count, piece(&rng))
                let chunk = Array(toClient.prefix(n))
                toClient.removeFirst(n)
                route(client: client.receive(chunk))
            }
        }
    }

    var bothEstablished: Bool { client.isEstablished && server.isEstablished }
}

@Suite("Connection machine: the key handshake and sealed frames, with no socket")
struct ConnectionMachineTests {
    @Test("the handshake completes fed one byte at a time; data flows both ways")
    func handshakeByteByByte() throws {
        var p = MachinePair(seed: 1)
        p.pump(piece: { _ in 1 })
        #expect(p.bothEstablished)
        #expect(p.clientEvents.contains { if case .established = $0 { true } else { false } })
        #expect(p.serverEvents.contains { if case .established = $0 { true } else { false } })
        let payloads: [[UInt8]] = [[1, 2, 3], [], Array(repeating: 0xab, count: 5000)]
        for payload in payloads { p.toServer += try p.client.seal(.data, payload) }
        for payload in payloads { p.toClient += try p.server.seal(.data, payload) }
        p.pump(piece: { _ in 1 })
        let atServer = p.serverEvents.compactMap { if case let .deliver(b) = $0 { b } else { nil } }
        let atClient = p.clientEvents.compactMap { if case let .deliver(b) = $0 { b } else { nil } }
        #expect(atServer == payloads)
        #expect(atClient == payloads)
    }

    @Test("random splits of the whole exchange give the same result", arguments: 0..<16)
    func randomSplits(seed: UInt64) throws {
        var p = MachinePair(seed: seed)
        p.pump(piece: { 1 + Int($0.next() % 64) }, seed: seed)
        #expect(p.bothEstablished)
        var rng = SplitMix64(seed: seed)
        let payloads = (0..<20).map { _ in rng.bytes(Int(rng.next() % 300)) }
        for payload in payloads { p.toServer += try p.client.seal(.data, payload) }
        p.pump(piece: { 1 + Int($0.next() % 97) }, seed: seed + 1)
        #expect(p.serverEvents.compactMap { if case let .deliver(b) = $0 { b } else { nil } } == payloads)
    }

    @Test("a wrong key: the client refuses the server's proof and never sends its own")
    func wrongKey() {
        var p = MachinePair(seed: 2, clientKey: Array(repeating: 1, count: 32))
        p.pump(piece: { _ in 1000 })
        #expect(p.clientEvents == [.close(.authenticationFailed)])
        #expect(!p.server.isEstablished)
        // Only HELLO left the client: 4 + 57 bytes.
        #expect(p.clientWire.count == 4 + 1 + Handshake.helloSize)
    }

    @Test("a bad proof: the server answers after a delay, generically, and closes")
    func badProof() {
        var rng = SplitMix64(seed: 3)
        var server = ConnectionMachine(role: .server, key: MachinePair.key, id: rng.bytes(16), nonce: rng.bytes(32))
        let hello = Handshake.hello(versions: 1...1, clientID: rng.bytes(16), nonce: rng.bytes(32))
        _ = server.receive(ConnectionMachine.frame(hello))
        let actions = server.receive(ConnectionMachine.frame([MessageType.proof.rawValue] + rng.bytes(32)))
        guard case let .closeAfterDelay(reply, reason)? = actions.first else {
            Issue.record("expected closeAfterDelay, got \(actions)")
            return
        }
        #expect(reason == .authenticationFailed)
        #expect(Array(reply.dropFirst(4).prefix(2)) == [MessageType.error.rawValue, HandshakeErrorCode.authentication.rawValue])
        #expect(!server.isEstablished)
        #expect(server.receive([0, 0, 0, 1, 0]).isEmpty, "a closed machine ignores further bytes")
    }

    @Test("a failed key or credential is told from other closes by its case, not its text")
    func authenticationFailureIsTyped() {
        #expect(CloseReason.authenticationFailed.isAuthenticationFailure)
        #expect(CloseReason.refusedByPeer(code: HandshakeErrorCode.authentication.rawValue, "").isAuthenticationFailure)
        #expect(!CloseReason.refusedByPeer(code: HandshakeErrorCode.busy.rawValue, "authentication failed").isAuthenticationFailure)
        #expect(!CloseReason.peerClosed.isAuthenticationFailure)
        #expect(!CloseReason.local("authentication failed").isAuthenticationFailure)
    }

    @Test("a recorded handshake replayed to a new server fails its proof")
    func replayedHandshake() {
        var p = MachinePair(seed: 4)
        p.pump(piece: { _ in 1000 })
        #expect(p.bothEstablished)
        // The recorded HELLO and PROOF, to a server with a fresh nonce.
        var rng = SplitMix64(seed: 99)
        var server = ConnectionMachine(role: .server, key: MachinePair.key, id: rng.bytes(16), nonce: rng.bytes(32))
        let actions = server.receive(p.clientWire)
        #expect(actions.contains { if case .closeAfterDelay(_, .authenticationFailed) = $0 { true } else { false } })
        #expect(!server.isEstablished)
    }

    @Test("the server's own challenge reflected back is refused as not a HELLO")
    func reflectedChallenge() {
        var p = MachinePair(seed: 5)
        // Move only HELLO to the server; keep its CHALLENGE.
        p.route(server: p.server.receive(p.toServer))
        p.toServer = []
        let challenge = p.toClient
        var rng = SplitMix64(seed: 7)
        var other = ConnectionMachine(role: .server, key: MachinePair.key, id: rng.bytes(16), nonce: rng.bytes(32))
        #expect(other.receive(challenge) == [.close(.badMagic)])
        // And to the same server, mid-handshake, where a PROOF is expected.
        #expect(p.server.receive(challenge) == [.close(.unexpectedMessage("expected PROOF"))])
    }

    @Test("a flipped bit in a sealed frame closes the connection", arguments: [0, 4, 5, 20])
    func flippedBit(at offset: Int) throws {
        var p = MachinePair(seed: 6)
        p.pump(piece: { _ in 1000 })
        var frame = try p.client.seal(.data, Array(repeating: 5, count: 30))
        frame[offset] ^= 0x10
        let actions = p.server.receive(frame)
        if offset < 4 {
            // The length field itself: either over the cap, or a frame that fails its tag.
            #expect(actions.allSatisfy { if case .close = $0 { true } else { false } })
        } else {
            #expect(actions == [.close(.decryptionFailed)])
        }
        #expect(!p.serverEvents.contains { if case .deliver = $0 { true } else { false } })
    }

    @Test("a frame replayed within a session closes the connection")
    func replayedFrame() throws {
        var p = MachinePair(seed: 8)
        p.pump(piece: { _ in 1000 })
        let frame = try p.client.seal(.data, [1, 2, 3])
        #expect(p.server.receive(frame) == [.deliver([1, 2, 3])])
        #expect(p.server.receive(frame) == [.close(.decryptionFailed)])
    }

    @Test("a 4 GiB length prefix is refused before the handshake and after it")
    func hugeLength() {
        var rng = SplitMix64(seed: 9)
        var server = ConnectionMachine(role: .server, key: MachinePair.key, id: rng.bytes(16), nonce: rng.bytes(32))
        #expect(server.receive([0xff, 0xff, 0xff, 0xff]) == [.close(.frameTooLarge(length: 0xffff_ffff, limit: 2048))])
        var p = MachinePair(seed: 10)
        p.pump(piece: { _ in 1000 })
        #expect(p.server.receive([0xff, 0xff, 0xff, 0xff]) == [.close(.frameTooLarge(length: 0xffff_ffff, limit: 1 << 20))])
    }

    @Test("no common version: a clear ERROR with the supported range")
    func versionMismatch() {
        var p = MachinePair(seed: 11, clientVersions: 7...9)
        p.pump(piece: { _ in 1000 })
        #expect(p.serverEvents == [.close(.versionMismatch(peer: 7...9))])
        guard case let .close(.refusedByPeer(code, text))? = p.clientEvents.first else {
            Issue.record("client got \(p.clientEvents)")
            return
        }
        #expect(code == HandshakeErrorCode.version.rawValue)
        #expect(text.contains("1...1"))
    }

    @Test("garbage first bytes close without a word")
    func garbage() {
        var rng = SplitMix64(seed: 12)
        var server = ConnectionMachine(role: .server, key: MachinePair.key, id: rng.bytes(16), nonce: rng.bytes(32))
        let actions = server.receive(Array("GET / HTTP/1.1\r\n\r\n".utf8))
        #expect(actions.count == 1)
        #expect(!actions.contains { if case .write = $0 { true } else { false } })
    }

    @Test("PING is answered with PONG; BYE closes with its reason")
    func pingAndBye() throws {
        var p = MachinePair(seed: 13)
        p.pump(piece: { _ in 1000 })
        p.toServer += try p.client.seal(.ping, [])
        p.pump(piece: { _ in 3 })
        #expect(p.server.isEstablished && p.client.isEstablished)
        p.toServer += try p.client.seal(.bye, Array("done".utf8))
        p.pump(piece: { _ in 1000 })
        #expect(p.serverEvents.last == .close(.bye("done")))
        #expect(throws: TransportError.closed) { try p.server.seal(.data, [1]) }
    }

    @Test("a payload over the frame limit is refused before it is sealed")
    func payloadLimit() throws {
        var p = MachinePair(seed: 14)
        p.pump(piece: { _ in 1000 })
        let max = p.client.maxPayload
        #expect(max == (1 << 20) - 17)
        #expect(TCPOptions().maxPayload == max, "what the daemon's document cores cut their frames to")
        #expect(throws: TransportError.frameTooLarge(size: max + 1, limit: max)) { try p.client.seal(.data, [UInt8](repeating: 0, count: max + 1)) }
        let big = try p.client.seal(.data, [UInt8](repeating: 1, count: max))
        #expect(p.server.receive(big) == [.deliver([UInt8](repeating: 1, count: max))])
    }
}
