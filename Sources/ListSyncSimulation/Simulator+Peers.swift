/// The simulated daemons' links (Docs/Semantics.md §7, "Peers"): a chain, or a ring.
extension SimulationConfiguration {
    /// The links of `daemons` daemons, each as (dialer, peer) with the dialer the lower number:
    /// each daemon to the next, and with ``ring`` and three daemons or more, the first to the last.
    ///
    /// - Complexity: O(daemons).
    func links(_ daemons: Int) -> [(Int, Int)] {
        var pairs = (0..<max(0, daemons - 1)).map { ($0, $0 + 1) }
        if ring, daemons >= 3 { pairs.append((0, daemons - 1)) }
        return pairs
    }

    /// Whether daemons `a` and `b` are linked (either way).
    func areLinked(_ a: Int, _ b: Int, daemons: Int) -> Bool {
        abs(a - b) == 1 || (ring && daemons >= 3 && Set([a, b]) == [0, daemons - 1])
    }
}

extension Simulator {
    /// Virtual milliseconds between two stability tables of one daemon (a daemon's is a second).
    static let gossipInterval: UInt64 = 5
}
