import ListSyncTransport
import ListSyncCrypto

/// One end of a connection as a state machine with no socket inside: received bytes in, actions
/// out (bytes to write, payloads to deliver, when to close and why).
///
/// It runs the mutual pre-shared-key handshake of Docs/Transport.md, then seals and opens frames
/// with ChaCha20-Poly1305, a key and a frame counter per direction. Randomness (the identity and
/// the nonce) is handed in, so tests replay it exactly. The I/O glue (``TCPConnection``) feeds it
/// whatever the socket reads, in pieces of any size, and does what it says.
struct ConnectionMachine: Sendable {
    /// Which end this is.
    enum Role: Sendable { case client, server }

    /// What the caller must do, in order.
    enum Action: Equatable, Sendable {
        /// Write these bytes to the peer.
        case write([UInt8])
        /// A payload (a DATA frame's) for the layer above.
        case deliver([UInt8])
        /// The handshake is done: the peer holds the key, or the credential of `claims` (a device's;
        /// nil for a holder of the daemon's key). Its 16-byte identity.
        case established(peerID: [UInt8], claims: DeviceClaims?)
        /// Close the connection now, after the writes before this action.
        case close(CloseReason)
        /// The peer failed the key proof: wait a fixed delay, write `reply`, then close (the
        /// delay and the generic reply give a guesser nothing to time or read).
        case closeAfterDelay(reply: [UInt8], CloseReason)
    }

    private enum State: Sendable {
        case awaitingHello
        case awaitingChallenge(hello: [UInt8])
        case awaitingProof(expected: [UInt8], keys: Keys, peerID: [UInt8], claims: DeviceClaims?)
        case awaitingWelcome(peerID: [UInt8])
        case established
        case closed
    }

    private struct Keys: Sendable {
        var send: ChaCha20Poly1305
        var receive: ChaCha20Poly1305
    }

    /// Bytes of a sealed frame's body besides the payload: the type byte and the tag.
    static let overhead = 1 + ChaCha20Poly1305.tagSize

    let role: Role
    private let key: [UInt8]
    private let claims: [UInt8]?
    private let localID: [UInt8]
    private let localNonce: [UInt8]
    private let versions: ClosedRange<UInt16>
    private let frameLimit: Int
    private var state: State
    private var decoder: FrameDecoder
    private var keys: Keys?
    private var sendCounter: UInt64 = 0
    private var receiveCounter: UInt64 = 0

    /// - Parameters:
    ///   - key: the pre-shared key (32 bytes): on a server the daemon's key; on a client the
    ///     daemon's key or a device credential's secret.
    ///   - claims: a client's device claims, encoded (sent in HELLO with the credential's secret as
    ///     `key`); nil for a holder of the daemon's key.
    ///   - id: this end's random 16-byte identity; `nonce`: 32 fresh random bytes.
    ///   - handshakeFrameLimit: the largest frame body before the handshake ends (2048: a HELLO
    ///     with the largest claims fits).
    ///   - frameLimit: the largest frame body after it (1 MiB).
    init(role: Role, key: [UInt8], claims: [UInt8]? = nil, id: [UInt8], nonce: [UInt8], versions: ClosedRange<UInt16> = Handshake.versions,
         handshakeFrameLimit: Int = 2048, frameLimit: Int = 1 << 20) {
        precondition(id.count == Handshake.idSize && nonce.count == Handshake.nonceSize)
        precondition(role == .client || claims == nil, "a server sends no claims")
        self.role = role
        self.key = key
        self.claims = claims
        self.localID = id
        self.localNonce = nonce
        self.versions = versions
        self.frameLimit = frameLimit
        self.state = role == .server ? .awaitingHello : .awaitingChallenge(hello: [])
        self.decoder = FrameDecoder(limit: handshakeFrameLimit)
    }

    /// Whether the handshake is done and the connection open.
    var isEstablished: Bool { if case .established = state { return true } else { return false } }
    /// Whether the machine has asked to close.
    var isClosed: Bool { if case .closed = state { return true } else { return false } }
    /// The largest payload ``seal(_:_:)`` accepts for DATA.
    var maxPayload: Int { frameLimit - Self.overhead }

    /// Opens the connection: a client sends HELLO; a server waits.
    mutating func start() -> [Action] {
        guard role == .client, case .awaitingChallenge = state else { return [] }
        let hello = Handshake.hello(versions: versions, clientID: localID, nonce: localNonce, claims: claims)
        state = .awaitingChallenge(hello: hello)
        return [.write(Self.frame(hello))]
    }

    /// Feeds bytes read from the socket.
    ///
    /// - Complexity: O(bytes), plus the AEAD of every whole frame.
    mutating func receive(_ bytes: some Collection<UInt8>) -> [Action] {
        if isClosed { return [] }
        decoder.append(bytes)
        var actions: [Action] = []
        while !isClosed {
            let frame: FrameDecoder.Frame
            do {
                guard let f = try decoder.next() else { break }
                frame = f
            } catch .tooLarge(let length, let limit) {
                return actions + close(.frameTooLarge(length: length, limit: limit))
            } catch {
                return actions + close(.malformed("a frame of length 0"))
            }
            actions += handle(frame)
        }
        return actions
    }

    /// Seals a message of `type` for the peer: the bytes to write.
    ///
    /// - Throws: ``TransportError/closed`` before the handshake ends or after a close;
    ///   ``TransportError/frameTooLarge(size:limit:)`` for a payload over ``maxPayload``.
    mutating func seal(_ type: MessageType, _ payload: some Collection<UInt8>) throws(TransportError) -> [UInt8] {
        var frame: [UInt8] = []
        try seal(type, payload, appendingTo: &frame)
        return frame
    }

    /// Seals a message of `type` for the peer and appends its frame to `out`, sealed in place
    /// there: no array of the frame's own, no copy (a socket's send queue takes every frame this
    /// way: a batch's fan-out is one sealed frame per subscriber, and nothing more).
    ///
    /// - Throws: as ``seal(_:_:)``; nothing is appended then.
    mutating func seal(_ type: MessageType, _ payload: some Collection<UInt8>, appendingTo out: inout [UInt8]) throws(TransportError) {
        guard let keys, !isClosed else { throw .closed }
        guard payload.count <= maxPayload else { throw .frameTooLarge(size: payload.count, limit: maxPayload) }
        let start = out.count
        withUnsafeBytes(of: UInt32(payload.count + Self.overhead).bigEndian) { out.append(contentsOf: $0) }
        out.append(type.rawValue)
        out.append(contentsOf: payload)
        out.append(contentsOf: repeatElement(0, count: ChaCha20Poly1305.tagSize))
        let counter = sendCounter
        sendCounter += 1
        out.withUnsafeMutableBytes { b in
            keys.send.seal(inPlace: UnsafeMutableRawBufferPointer(rebasing: b[(start + 4)...]), counter: counter,
                           authenticating: UnsafeRawBufferPointer(rebasing: b[start..<(start + 4)]))
        }
    }

    /// The bytes ``seal(_:_:appendingTo:)`` appends for a payload of `count` bytes.
    static func sealedSize(_ count: Int) -> Int { 4 + count + overhead }

    /// Marks the machine closed (the glue closed the socket for its own reason).
    mutating func markClosed() { state = .closed }

    // MARK: Frames

    private mutating func handle(_ frame: FrameDecoder.Frame) -> [Action] {
        switch state {
        case .awaitingHello:
            return receiveHello(frame.body)
        case let .awaitingChallenge(hello):
            return receiveChallenge(frame.body, hello: hello)
        case let .awaitingProof(expected, keys, peerID, claims):
            return receiveProof(frame.body, expected: expected, keys: keys, peerID: peerID, claims: claims)
        case let .awaitingWelcome(peerID):
            guard let (type, _) = open(frame) else { return close(.decryptionFailed) }
            guard type == MessageType.welcome.rawValue else { return close(.unexpectedMessage("type \(type) before WELCOME")) }
            state = .established
            return [.established(peerID: peerID, claims: nil)]
        case .established:
            guard let (type, payload) = open(frame) else { return close(.decryptionFailed) }
            switch MessageType(rawValue: type) {
            case .data: return [.deliver(payload)]
            case .ping: return (try? seal(.pong, [])).map { [.write($0)] } ?? []
            case .pong: return []
            case .bye: return close(.bye(String(decoding: payload, as: UTF8.self)))
            default: return close(.unexpectedMessage("type \(type) on an open connection"))
            }
        case .closed:
            return []
        }
    }

    private mutating func receiveHello(_ body: [UInt8]) -> [Action] {
        guard let hello = Handshake.parseHello(body) else { return close(.badMagic) }
        guard hello.versions.overlaps(versions) else {
            let text = "no common protocol version: this server speaks \(versions.lowerBound)...\(versions.upperBound)"
            return [.write(Self.frame(Handshake.error(.version, text)))] + close(.versionMismatch(peer: hello.versions))
        }
        // A device proves the secret derived from its claims: changed claims, another key.
        var claims: DeviceClaims?
        var key = self.key
        if let encoded = hello.claims {
            do { claims = try DeviceClaims(decoding: encoded) } catch { return close(.malformed("device claims: \(error)")) }
            key = Credential.secret(for: encoded, masterKey: self.key)
        }
        let version = min(hello.versions.upperBound, versions.upperBound)
        let head = Handshake.challengeHead(version: version, serverID: localID, nonce: localNonce)
        let transcript = SHA256.hash(body + head)
        let macS = HMACSHA256.authenticate(Handshake.serverLabel + transcript, key: key)
        let macC = HMACSHA256.authenticate(Handshake.clientLabel + transcript + macS, key: key)
        let keys = Self.deriveKeys(key: key, clientNonce: hello.nonce, serverNonce: localNonce,
                                   clientID: hello.clientID, serverID: localID, transcript: transcript, role: .server)
        state = .awaitingProof(expected: macC, keys: keys, peerID: hello.clientID, claims: claims)
        return [.write(Self.frame(head + macS))]
    }

    private mutating func receiveChallenge(_ body: [UInt8], hello: [UInt8]) -> [Action] {
        if body.first == MessageType.error.rawValue, body.count >= 2 {
            return close(.refusedByPeer(code: body[1], String(decoding: body.dropFirst(2), as: UTF8.self)))
        }
        guard let challenge = Handshake.parseChallenge(body) else { return close(.badMagic) }
        guard versions.contains(challenge.version) else { return close(.versionMismatch(peer: challenge.version...challenge.version)) }
        let transcript = SHA256.hash(hello + challenge.head)
        // The server proves the key first: a server without it learns nothing from our proof.
        guard HMACSHA256.isValid(challenge.mac, for: Handshake.serverLabel + transcript, key: key) else {
            return close(.authenticationFailed)
        }
        let macC = HMACSHA256.authenticate(Handshake.clientLabel + transcript + challenge.mac, key: key)
        let clientNonce = Array(hello[25..<57])
        keys = Self.deriveKeys(key: key, clientNonce: clientNonce, serverNonce: challenge.nonce,
                               clientID: localID, serverID: challenge.serverID, transcript: transcript, role: .client)
        state = .awaitingWelcome(peerID: challenge.serverID)
        decoder.limit = frameLimit
        return [.write(Self.frame([MessageType.proof.rawValue] + macC))]
    }

    private mutating func receiveProof(_ body: [UInt8], expected: [UInt8], keys: Keys, peerID: [UInt8], claims: DeviceClaims?) -> [Action] {
        guard body.count == 1 + Handshake.macSize, body[0] == MessageType.proof.rawValue else {
            return close(.unexpectedMessage("expected PROOF"))
        }
        guard ConstantTime.equals(body[1...], expected) else {
            state = .closed
            return [.closeAfterDelay(reply: Self.frame(Handshake.error(.authentication, "authentication failed")),
                                     .authenticationFailed)]
        }
        self.keys = keys
        state = .established
        decoder.limit = frameLimit
        let welcome = (try? seal(.welcome, [])) ?? []
        return [.write(welcome), .established(peerID: peerID, claims: claims)]
    }

    /// Opens an encrypted frame: its type and payload, or `nil` if it fails authentication.
    private mutating func open(_ frame: FrameDecoder.Frame) -> (UInt8, [UInt8])? {
        guard let keys, frame.body.count >= Self.overhead else { return nil }
        let nonce = ChaCha20Poly1305.nonce(counter: receiveCounter)
        guard let plain = try? keys.receive.open(frame.body, nonce: nonce, authenticating: frame.header),
              let type = plain.first else { return nil }
        receiveCounter += 1
        return (type, Array(plain.dropFirst()))
    }

    private mutating func close(_ reason: CloseReason) -> [Action] {
        state = .closed
        return [.close(reason)]
    }

    private static func deriveKeys(key: [UInt8], clientNonce: [UInt8], serverNonce: [UInt8], clientID: [UInt8],
                                   serverID: [UInt8], transcript: [UInt8], role: Role) -> Keys {
        let okm = HKDFSHA256.deriveKey(ikm: key, salt: clientNonce + serverNonce,
                                       info: Handshake.keyInfo + clientID + serverID + transcript, length: 64)
        // Sizes are fixed: these cannot fail.
        let c2s = try! ChaCha20Poly1305(key: okm[0..<32])
        let s2c = try! ChaCha20Poly1305(key: okm[32..<64])
        return role == .client ? Keys(send: c2s, receive: s2c) : Keys(send: s2c, receive: c2s)
    }

    /// A clear frame: length and body.
    static func frame(_ body: [UInt8]) -> [UInt8] { FrameDecoder.header(body.count) + body }
}
