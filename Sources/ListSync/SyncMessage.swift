import ListCRDT

/// One frame of the sync protocol.
public enum SyncMessage: Equatable, Sendable {
    /// "I am `replica` and I have seen `version`": sent on connect and, for anti-entropy,
    /// periodically. The receiver answers with the operations the sender lacks.
    case hello(replica: ReplicaID, version: VersionVector)
    /// Operations, in causal order, encoded with the wire format of `Docs/WireFormat.md`.
    case operations([ListOperation])

    static let helloTag: UInt8 = 1
    static let operationsTag: UInt8 = 2
    /// The protocol version, first byte of every frame.
    public static let protocolVersion: UInt8 = 1

    /// The frame's bytes.
    ///
    /// - Complexity: O(size).
    public func encoded() -> [UInt8] {
        var w = WireWriter()
        w.byte(Self.protocolVersion)
        switch self {
        case let .hello(replica, version):
            w.byte(Self.helloTag)
            w.varint(replica.rawValue)
            w.count(version.count)
            for (r, c) in version.entries {
                w.varint(r.rawValue)
                w.varint(c)
            }
        case let .operations(ops):
            w.byte(Self.operationsTag)
            w.bytes.append(contentsOf: ListOperation.encode(ops))
        }
        return w.bytes
    }

    /// Decodes a whole frame, validating it completely.
    ///
    /// - Complexity: O(size).
    public init(decoding frame: [UInt8]) throws(SyncError) {
        var r = WireReader(frame)
        do {
            let version = try r.byte()
            guard version == Self.protocolVersion else { throw SyncError.unsupportedVersion(version) }
            switch try r.byte() {
            case Self.helloTag:
                let replica = ReplicaID(try r.varint())
                let n = try r.count(minBytes: 2)
                var counters: [ReplicaID: UInt64] = [:]
                for _ in 0..<n {
                    let id = ReplicaID(try r.varint())
                    let c = try r.varint()
                    guard counters.updateValue(c, forKey: id) == nil else {
                        throw SyncError.malformedFrame("replica \(id) twice in a version")
                    }
                }
                guard r.isAtEnd else { throw SyncError.malformedFrame("\(r.remaining) trailing bytes") }
                self = .hello(replica: replica, version: VersionVector(counters))
            case Self.operationsTag:
                do {
                    self = .operations(try ListOperation.decode(try r.raw(r.remaining)))
                } catch {
                    throw SyncError.malformedOperations(error)
                }
            case let tag:
                throw SyncError.malformedFrame("unknown message tag \(tag)")
            }
        } catch let error as SyncError {
            throw error
        } catch let error as WireError {
            throw .malformedFrame(error.description)
        } catch {
            throw .malformedFrame("\(error)")
        }
    }
}

/// Why the sync protocol refused a frame. The document and the session are unchanged.
public enum SyncError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The frame is not a valid message.
    case malformedFrame(String)
    /// The operations inside the frame do not decode.
    case malformedOperations(WireError)
    /// The frame uses a protocol version this build does not speak.
    case unsupportedVersion(UInt8)
    /// The peer said hello as a different replica than before on the same connection.
    case peerChanged(from: ReplicaID, to: ReplicaID)

    public var description: String {
        switch self {
        case let .malformedFrame(why): return "malformed frame: \(why)"
        case let .malformedOperations(e): return "malformed operations: \(e)"
        case let .unsupportedVersion(v): return "unsupported protocol version \(v)"
        case let .peerChanged(a, b): return "peer changed identity from \(a) to \(b)"
        }
    }
}
