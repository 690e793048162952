import Testing
import ListCRDT
import ListSync
@testable import ListSyncTCP

/// Device credentials in the handshake, with no socket (Docs/Security.md, "Credentials").
@Suite("Credential handshake: claims in HELLO, bound by the derived key")
struct CredentialHandshakeTests {
    static func claims(readOnly: Bool = true) throws -> DeviceClaims {
        try DeviceClaims(id: Array(repeating: 7, count: 16), name: "phone",
                         documents: [DocumentID(high: 1, low: 2)], readOnly: readOnly, expires: 1_900_000_000)
    }

    @Test("claims round-trip; every proper prefix and a trailing byte are typed errors")
    func encoding() throws {
        let c = try Self.claims()
        let bytes = c.encoded()
        #expect(try DeviceClaims(decoding: bytes) == c)
        for n in 0..<bytes.count { #expect(throws: CredentialError.self) { try DeviceClaims(decoding: bytes.prefix(n)) } }
        #expect(throws: CredentialError.self) { try DeviceClaims(decoding: bytes + [0]) }
        let file = Credential(claims: c, masterKey: MachinePair.key)
        #expect(try Credential(fileContents: file.fileContents()) == file)
    }

    @Test("a device's credential completes the handshake fed one byte at a time; the server learns its claims")
    func deviceHandshake() throws {
        let c = try Self.claims()
        let credential = Credential(claims: c, masterKey: MachinePair.key)
        var p = MachinePair(seed: 31, clientKey: credential.secret, claims: c.encoded())
        p.pump(piece: { _ in 1 })
        #expect(p.bothEstablished)
        let established = p.serverEvents.compactMap { e -> DeviceClaims?? in
            if case let .established(_, claims) = e { return claims } else { return nil }
        }
        #expect(established == [c])
    }

    @Test("changed claims with the old secret, and another daemon's credential, fail the proof")
    func forged() throws {
        let original = Credential(claims: try Self.claims(), masterKey: MachinePair.key)
        var writable = original.claims
        writable.readOnly = false
        var p = MachinePair(seed: 32, clientKey: original.secret, claims: writable.encoded())
        p.pump(piece: { _ in 7 })
        #expect(!p.client.isEstablished && !p.server.isEstablished)
        let foreign = Credential(claims: original.claims, masterKey: Array(repeating: 9, count: 32))
        var q = MachinePair(seed: 33, clientKey: foreign.secret, claims: foreign.claims.encoded())
        q.pump(piece: { _ in 100 })
        #expect(!q.client.isEstablished && !q.server.isEstablished)
    }

    @Test("claims that do not decode close the connection with a typed reason")
    func malformedClaims() {
        var p = MachinePair(seed: 34, claims: [1, 2, 3])
        p.pump(piece: { _ in 50 })
        #expect(!p.server.isEstablished)
        #expect(p.serverEvents.contains { if case .close(.malformed) = $0 { return true } else { return false } })
    }
}
