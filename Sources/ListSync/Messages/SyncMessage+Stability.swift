import ListCRDT

/// The `stability` message's table (Docs/Protocol.md, "Compaction"):
///
/// ```
/// entries := count:varint (daemon:varint (≠ 0) sequence:varint version claimed:varint replica:varint ×)×
/// ```
/// Daemons in increasing order, each once; claimed replicas in increasing order, each once. A
/// decoder refuses a daemon named twice, a replica claimed twice and a replica 0 (malformed).
extension WireWriter {
    mutating func stabilityEntries(_ entries: [ReplicaID: PeerStability.Entry]) {
        count(entries.count)
        for d in entries.keys.sorted() {
            let e = entries[d]!
            varint(d.rawValue); varint(e.sequence); version(e.version)
            count(e.claimed.count)
            for r in e.claimed.sorted() { varint(r.rawValue) }
        }
    }
}

extension WireReader {
    mutating func stabilityEntries() throws(WireError) -> [ReplicaID: PeerStability.Entry] {
        var entries: [ReplicaID: PeerStability.Entry] = [:]
        for _ in 0..<(try count(minBytes: 4)) {
            let at = offset
            let d = try varint()
            guard d != 0, entries[ReplicaID(d)] == nil else { throw .invalidValue("daemon \(d) in stability", offset: at) }
            let sequence = try varint()
            let v = try version()
            var claimed = Set<ReplicaID>()
            for _ in 0..<(try count(minBytes: 1)) {
                let rAt = offset
                let r = try varint()
                guard r != 0, claimed.insert(ReplicaID(r)).inserted else {
                    throw .invalidValue("replica \(r) claimed in stability", offset: rAt)
                }
            }
            entries[ReplicaID(d)] = PeerStability.Entry(sequence: sequence, version: v, claimed: claimed)
        }
        return entries
    }
}
