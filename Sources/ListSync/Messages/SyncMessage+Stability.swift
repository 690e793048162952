import ListCRDT

/// The `stability` message's table (Docs/Protocol.md, "Compaction"):
///
/// ```
/// entries := count:varint (daemon:varint (≠ 0) sequence:varint version claimed:varint replica:varint ×)×
///            [retirements [parted [prefixes [runs [held]]]]]
/// retirements := count:varint (daemon:varint retiredAt:varint acknowledged:varint (daemon:varint sequence:varint)×
///                               retired:varint replica:varint×)×
/// parted := count:varint (daemon:varint ranges:varint (replica:varint first:varint last:varint)×)×
/// prefixes := count:varint (daemon:varint offer:version refused:version)×
/// runs := count:varint (daemon:varint ranges)×     (ranges as in the `parted` message)
/// held := count:varint (daemon:varint held:version)×
/// ```
/// Daemons in increasing order, each once; claimed replicas in increasing order, each once. A
/// decoder refuses a daemon named twice, a replica claimed twice and a replica 0 (malformed).
/// `retirements` (Docs/Semantics.md §7, "Retiring with peers") follows only when an entry has a
/// ``PeerStability/Entry/retiredAt``, ``PeerStability/Entry/acknowledged`` or
/// ``PeerStability/Entry/retired`` (an older daemon,
/// which reads no more than the entries, never sees it unless someone retired); each names a
/// daemon of the entries, once, in increasing order; absent, they are 0 and empty. `parted`
/// (Docs/Semantics.md §7, "A copy left out of a peer's floor") follows only when an entry has
/// ``PeerStability/Entry/parted`` ranges (after a `retirements` part, empty if no entry retired
/// anyone): a daemon of an older build refuses such a message as malformed (trailing bytes), so
/// it is sent only once some daemon merged back; each names a daemon of the entries, once, in
/// increasing order, with its ranges per replica in increasing order. `prefixes`
/// (Docs/Semantics.md §7, "Peers while busy") follows only when an entry has an
/// ``PeerStability/Entry/offer`` (after `retirements` and `parted` parts, empty if nobody retired
/// or parted anything): each names a daemon of the entries, once, in increasing order, with its
/// offer and the proposal it refused (empty: none); an entry it does not name offers nothing. A
/// daemon of an older build refuses such a message as malformed (trailing bytes): it is sent only
/// by a daemon that takes stable prefixes with its peers. `runs` follows only when an entry
/// parted an author's operations in runs apart (after the other parts, empty where nobody
/// retired, parted or offered): `parted` gives each author's first counter to its last, and
/// `runs` the runs themselves, for each daemon whose ranges have gaps, in increasing order
/// (their first and last counters must be those of `parted`). A daemon of the previous build
/// refuses it as malformed, as above; one that reads `parted` alone takes what lies between the
/// runs for parted too, as it always did (Docs/Semantics.md §7, "Parted originals a copy holds").
/// `held` follows only when an entry holds more than its version (``PeerStability/Entry/held``:
/// it vouched for its version with concurrent operations outside it; Docs/Semantics.md §7,
/// "Peers compacting under a chain of concurrent edits"), after the other parts, empty where
/// nothing of theirs is said: each names a daemon of the entries, once, in increasing order,
/// with a version that includes that entry's version. A daemon of the previous build refuses
/// it as malformed (trailing bytes), as above: upgrade every daemon of a peered document
/// first, or run the new ones with `--compact-quiescent-only` until then.
extension WireWriter {
    mutating func stabilityEntries(_ entries: [ReplicaID: PeerStability.Entry]) {
        count(entries.count)
        for d in entries.keys.sorted() {
            let e = entries[d]!
            varint(d.rawValue); varint(e.sequence); version(e.version)
            count(e.claimed.count)
            for r in e.claimed.sorted() { varint(r.rawValue) }
        }
        let daemons = entries.keys.sorted()
        let parting = daemons.filter { !entries[$0]!.parted.isEmpty }
        // The parts in their order, each the daemons it names; written up to the last that names
        // any (the earlier ones then empty if need be), so that a daemon of an older build,
        // which reads no further than the parts it knows, gets the bytes it always got.
        let parts = [
            daemons.filter { entries[$0]!.retiredAt > 0 || !entries[$0]!.acknowledged.isEmpty || !entries[$0]!.retired.isEmpty },
            parting,
            daemons.filter { entries[$0]!.offer != nil },
            parting.filter { entries[$0]!.parted.hasGaps },
            daemons.filter { entries[$0]!.held != nil },
        ]
        guard let last = parts.lastIndex(where: { !$0.isEmpty }) else { return }
        for (k, named) in parts[...last].enumerated() {
            count(named.count)
            for d in named {
                let e = entries[d]!
                varint(d.rawValue)
                switch k {
                case 0:
                    varint(e.retiredAt)
                    count(e.acknowledged.count)
                    for a in e.acknowledged.keys.sorted() { varint(a.rawValue); varint(e.acknowledged[a]!) }
                    count(e.retired.count)
                    for r in e.retired.sorted() { varint(r.rawValue) }
                case 1: partedRanges(e.parted.hulls)
                case 2: version(e.offer!); version(e.refused)
                case 3: partedRuns(e.parted)
                default: version(e.held!)
                }
            }
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
        try parts(into: &entries)
        return entries
    }

    /// The parts after the entries, in their order, as many as the bytes hold (``WireWriter/
    /// stabilityEntries(_:)``): each a `count` of daemons of the entries, in increasing order,
    /// each with its part's fields, set on its entry.
    private mutating func parts(into entries: inout [ReplicaID: PeerStability.Entry]) throws(WireError) {
        let names = ["retirements", "parted", "prefixes", "runs", "held"]
        let minBytes = [4, 2, 3, 2, 2]
        for k in names.indices where !isAtEnd {
            var previous: UInt64 = 0
            for _ in 0..<(try count(minBytes: minBytes[k])) {
                let at = offset
                let d = try varint()
                guard d > previous, let entry = entries[ReplicaID(d)] else { throw .invalidValue("daemon \(d) in \(names[k])", offset: at) }
                previous = d
                entries[ReplicaID(d)] = try part(k, of: entry, daemon: d, at: at)
            }
        }
    }

    /// Part `k`'s fields of daemon `d`'s entry, read into it.
    private mutating func part(_ k: Int, of entry: PeerStability.Entry, daemon d: UInt64, at: Int) throws(WireError) -> PeerStability.Entry {
        var entry = entry
        switch k {
        case 0:
            // `retirements`: ``PeerStability/Entry/retiredAt``, ``PeerStability/Entry/acknowledged``
            // and ``PeerStability/Entry/retired``.
            entry.retiredAt = try varint()
            var last: UInt64 = 0
            for _ in 0..<(try count(minBytes: 2)) {
                let aAt = offset
                let a = try varint()
                guard a > last, a != d else { throw .invalidValue("daemon \(a) acknowledged in retirements", offset: aAt) }
                last = a
                entry.acknowledged[ReplicaID(a)] = try varint()
            }
            var lastRetired: UInt64 = 0
            for _ in 0..<(try count(minBytes: 1)) {
                let rAt = offset
                let r = try varint()
                guard r > lastRetired else { throw .invalidValue("replica \(r) retired in retirements", offset: rAt) }
                lastRetired = r
                entry.retired.insert(ReplicaID(r))
            }
        case 1:
            // `parted`: ``PeerStability/Entry/parted``, one run per author.
            entry.parted = PartedRanges(hulls: try partedRanges())
        case 2:
            // `prefixes`: ``PeerStability/Entry/offer`` and ``PeerStability/Entry/refused``.
            entry.offer = try version()
            entry.refused = try version()
        case 3:
            // `runs`: the runs apart, in place of `parted`'s one run per author, whose first and
            // last counters they must keep.
            let runs = try partedRuns()
            guard runs.hulls == entry.parted.hulls else { throw .invalidValue("runs of daemon \(d) that its parted ranges do not bound", offset: at) }
            entry.parted = runs
        default:
            // `held`: what the daemon's copy held when it wrote its entry's version
            // (``PeerStability/Entry/held``); it must include that version.
            let held = try version()
            guard held.includes(entry.version) else { throw .invalidValue("daemon \(d) holding less than its version", offset: at) }
            entry.held = held
        }
        return entry
    }
}
