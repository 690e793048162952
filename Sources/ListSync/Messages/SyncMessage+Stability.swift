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
        let retiring = entries.keys.sorted().filter {
            entries[$0]!.retiredAt > 0 || !entries[$0]!.acknowledged.isEmpty || !entries[$0]!.retired.isEmpty
        }
        let parting = entries.keys.sorted().filter { !entries[$0]!.parted.isEmpty }
        let offering = entries.keys.sorted().filter { entries[$0]!.offer != nil }
        let gapped = parting.filter { entries[$0]!.parted.hasGaps }
        let holding = entries.keys.sorted().filter { entries[$0]!.held != nil }
        guard !retiring.isEmpty || !parting.isEmpty || !offering.isEmpty || !holding.isEmpty else { return }
        count(retiring.count)
        for d in retiring {
            let e = entries[d]!
            varint(d.rawValue); varint(e.retiredAt)
            count(e.acknowledged.count)
            for a in e.acknowledged.keys.sorted() { varint(a.rawValue); varint(e.acknowledged[a]!) }
            count(e.retired.count)
            for r in e.retired.sorted() { varint(r.rawValue) }
        }
        guard !parting.isEmpty || !offering.isEmpty || !holding.isEmpty else { return }
        count(parting.count)
        for d in parting {
            varint(d.rawValue)
            partedRanges(entries[d]!.parted.hulls)
        }
        guard !offering.isEmpty || !gapped.isEmpty || !holding.isEmpty else { return }
        count(offering.count)
        for d in offering {
            varint(d.rawValue); version(entries[d]!.offer!); version(entries[d]!.refused)
        }
        guard !gapped.isEmpty || !holding.isEmpty else { return }
        count(gapped.count)
        for d in gapped {
            varint(d.rawValue)
            partedRuns(entries[d]!.parted)
        }
        guard !holding.isEmpty else { return }
        count(holding.count)
        for d in holding {
            varint(d.rawValue); version(entries[d]!.held!)
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
        if !isAtEnd { try retirements(into: &entries) }
        if !isAtEnd { try parted(into: &entries) }
        if !isAtEnd { try prefixes(into: &entries) }
        if !isAtEnd { try runs(into: &entries) }
        if !isAtEnd { try held(into: &entries) }
        return entries
    }

    /// The `held` part: what each daemon's copy held when it wrote its entry's version
    /// (``PeerStability/Entry/held``), set on its entry; it must include that version.
    private mutating func held(into entries: inout [ReplicaID: PeerStability.Entry]) throws(WireError) {
        var previous: UInt64 = 0
        for _ in 0..<(try count(minBytes: 2)) {
            let at = offset
            let d = try varint()
            guard d > previous, let entry = entries[ReplicaID(d)] else { throw .invalidValue("daemon \(d) in held", offset: at) }
            previous = d
            let held = try version()
            guard held.includes(entry.version) else { throw .invalidValue("daemon \(d) holding less than its version", offset: at) }
            entries[ReplicaID(d)]!.held = held
        }
    }

    /// The `runs` part: the parted ranges of each daemon that parted an author's operations in
    /// runs apart, set on its entry in place of the `parted` part's one run per author, whose
    /// first and last counters they must keep.
    private mutating func runs(into entries: inout [ReplicaID: PeerStability.Entry]) throws(WireError) {
        var previous: UInt64 = 0
        for _ in 0..<(try count(minBytes: 2)) {
            let at = offset
            let d = try varint()
            guard d > previous, let entry = entries[ReplicaID(d)] else { throw .invalidValue("daemon \(d) in runs", offset: at) }
            previous = d
            let runs = try partedRuns()
            guard runs.hulls == entry.parted.hulls else { throw .invalidValue("runs of daemon \(d) that its parted ranges do not bound", offset: at) }
            entries[ReplicaID(d)]!.parted = runs
        }
    }

    /// The `prefixes` part: each daemon's ``PeerStability/Entry/offer`` and
    /// ``PeerStability/Entry/refused``, set on its entry.
    private mutating func prefixes(into entries: inout [ReplicaID: PeerStability.Entry]) throws(WireError) {
        var previous: UInt64 = 0
        for _ in 0..<(try count(minBytes: 3)) {
            let at = offset
            let d = try varint()
            guard d > previous, entries[ReplicaID(d)] != nil else { throw .invalidValue("daemon \(d) in prefixes", offset: at) }
            previous = d
            entries[ReplicaID(d)]!.offer = try version()
            entries[ReplicaID(d)]!.refused = try version()
        }
    }

    /// The `parted` part: each daemon's ``PeerStability/Entry/parted``, set on its entry.
    private mutating func parted(into entries: inout [ReplicaID: PeerStability.Entry]) throws(WireError) {
        var previous: UInt64 = 0
        for _ in 0..<(try count(minBytes: 2)) {
            let at = offset
            let d = try varint()
            guard d > previous, entries[ReplicaID(d)] != nil else { throw .invalidValue("daemon \(d) in parted", offset: at) }
            previous = d
            entries[ReplicaID(d)]!.parted = PartedRanges(hulls: try partedRanges())
        }
    }

    /// The `retirements` part: each daemon's ``PeerStability/Entry/retiredAt`` and
    /// ``PeerStability/Entry/acknowledged``, set on its entry.
    private mutating func retirements(into entries: inout [ReplicaID: PeerStability.Entry]) throws(WireError) {
        var previous: UInt64 = 0
        for _ in 0..<(try count(minBytes: 4)) {
            let at = offset
            let d = try varint()
            guard d > previous, entries[ReplicaID(d)] != nil else { throw .invalidValue("daemon \(d) in retirements", offset: at) }
            previous = d
            entries[ReplicaID(d)]!.retiredAt = try varint()
            var last: UInt64 = 0
            for _ in 0..<(try count(minBytes: 2)) {
                let aAt = offset
                let a = try varint()
                guard a > last, a != d else { throw .invalidValue("daemon \(a) acknowledged in retirements", offset: aAt) }
                last = a
                entries[ReplicaID(d)]!.acknowledged[ReplicaID(a)] = try varint()
            }
            var lastRetired: UInt64 = 0
            for _ in 0..<(try count(minBytes: 1)) {
                let rAt = offset
                let r = try varint()
                guard r > lastRetired else { throw .invalidValue("replica \(r) retired in retirements", offset: rAt) }
                lastRetired = r
                entries[ReplicaID(d)]!.retired.insert(ReplicaID(r))
            }
        }
    }
}
