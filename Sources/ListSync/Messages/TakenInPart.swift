import ListCRDT

/// What a daemon took of a batch it refused in part (``SyncErrorCode/compacted`` or
/// ``SyncErrorCode/refused``: "the others are durable and applied"), said at the end of the
/// refusal's text (Docs/Protocol.md, "Errors"): the daemon's durable version once the batch was
/// durable, as an `ack` says it, and, per author, the least counter it refused in the batch.
///
/// A device that knows this counts the edits of the batch the daemon took as acknowledged
/// (``DeviceCopyPolicy/acknowledgedByRefusal(_:taken:acknowledged:local:)``) and makes again
/// only the others: made again too, the edits the daemon took would exist twice once that daemon
/// merges its copy back (Docs/Semantics.md §7, "A batch refused in part").
///
/// It is written in the text, not in bytes after it, because a client of an older build refuses
/// an `error` message with trailing bytes as malformed: in the text it only shows, and a daemon
/// of an older build, which does not write it, leaves the device with the rule of before (the
/// whole batch taken as refused).
public struct TakenInPart: Hashable, Sendable, CustomStringConvertible {
    /// The daemon's durable version once the batch was durable (every operation of the batch
    /// that it applied is in it, as in an `ack`).
    public var version: VersionVector
    /// Per author, the least counter of an operation of the batch the daemon refused (an
    /// operation that spans several counters is refused from its first).
    public var refusedFrom: VersionVector

    /// What a daemon took of a batch.
    public init(version: VersionVector, refusedFrom: VersionVector) {
        self.version = version
        self.refusedFrom = refusedFrom
    }

    /// What a daemon took of a batch whose refused operations `refused` names, at `version`.
    ///
    /// - Complexity: O(k log r) for k refusals of r authors.
    public init(version: VersionVector, refused: [ApplyError]) {
        var least: [ReplicaID: UInt64] = [:]
        for e in refused {
            let id: OpID
            switch e {
            case let .equivocation(i), let .malformed(i, _), let .valueTooLarge(i, _, _), let .bufferFull(i, _): id = i
            }
            least[id.replica] = min(least[id.replica] ?? .max, id.counter)
        }
        self.init(version: version, refusedFrom: VersionVector(least))
    }

    /// Whether the operation with ids up to `lastID` (its first being of the same replica) was
    /// refused: its author's least refused counter is at most its last.
    public func refuses(_ op: ListOperation) -> Bool {
        let from = refusedFrom[op.id.replica]
        return from != 0 && from <= op.lastID.counter
    }

    /// Both together: the greater version (each is durable on the daemon) and the lesser refused
    /// counter per author (the refusals of two batches of one edit).
    ///
    /// - Complexity: O(r log r).
    public func merged(with other: TakenInPart) -> TakenInPart {
        var v = version
        v.formUnion(other.version)
        var least = refusedFrom.counters
        for (r, c) in other.refusedFrom.entries { least[r] = min(least[r] ?? .max, c) }
        return TakenInPart(version: v, refusedFrom: VersionVector(least))
    }

    /// Where the addition starts in a refusal's text.
    static let marker = " [taken: "
    static let separator = "; refused from: "

    public var description: String {
        "\(Self.marker)\(version)\(Self.separator)\(refusedFrom)]"
    }

    /// `text` with this addition at its end, or `text` alone when both would be longer than an
    /// error's text may be (``SyncMessage/maxTextBytes``): the device then keeps the rule of
    /// before.
    public func appended(to text: String) -> String {
        let whole = Self.stripped(text) + description
        return whole.utf8.count <= SyncMessage.maxTextBytes ? whole : text
    }

    /// `text` without an addition at its end.
    public static func stripped(_ text: String) -> String {
        guard TakenInPart(text: text) != nil, let r = text.ranges(of: marker).last else { return text }
        return String(text[..<r.lowerBound])
    }

    /// The addition at the end of a refusal's `text`; nil when there is none (a daemon of an
    /// older build) or it does not read as one (taken as none).
    ///
    /// - Complexity: O(n) for the text's length.
    public init?(text: String) {
        guard text.hasSuffix("]"), let r = text.ranges(of: Self.marker).last else { return nil }
        let body = text[r.upperBound...].dropLast()
        guard let s = body.firstRange(of: Self.separator),
              let version = Self.parseVersion(body[..<s.lowerBound]),
              let refusedFrom = Self.parseVersion(body[s.upperBound...]) else { return nil }
        self.init(version: version, refusedFrom: refusedFrom)
    }

    /// `[1:5, 3:7]` (``VersionVector/description``); nil for anything else (a replica twice, a
    /// zero counter).
    static func parseVersion(_ s: Substring) -> VersionVector? {
        guard s.hasPrefix("["), s.hasSuffix("]") else { return nil }
        let inner = s.dropFirst().dropLast()
        var counters: [ReplicaID: UInt64] = [:]
        guard !inner.isEmpty else { return VersionVector() }
        for entry in inner.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = entry.trimmingPrefix(" ").split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let r = UInt64(parts[0]), let c = UInt64(parts[1]), c > 0,
                  counters.updateValue(c, forKey: ReplicaID(r)) == nil else { return nil }
        }
        return VersionVector(counters)
    }
}
