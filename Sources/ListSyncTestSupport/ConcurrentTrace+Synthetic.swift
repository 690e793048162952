import Foundation
import ListSyncSimulation

// A generated concurrent trace with many agents and a long, churning history (issue 29: the
// memory a replica holds per operation of history), and the JSON Lines writer that lets the
// peers' replay (Benchmarks/compare/peers.py) run the same trace.

extension ConcurrentTrace {
    /// A trace of `agents` people editing one text for about `operations` element operations
    /// (single-character inserts and deletes), most of whose text is deleted again: the text stays
    /// near `liveTarget` characters (default: 4% of the operations, the share the 204-author
    /// history of issue 29 keeps), so the history, not the text, is what a replica holds.
    ///
    /// The trace goes in rounds. In each round 1 to 4 distinct agents, drawn at random, each make
    /// one transaction on the text as it was after the previous round (their parents are all of
    /// that round's transactions), concurrently with each other. The text is cut into one region
    /// per agent of the round, and each agent edits only its own region (1 to 3 patches there, each
    /// deleting and inserting runs of 1 to 16 characters, lowercase letters), so concurrent
    /// transactions never delete the same character and the length after every round is known
    /// without merging. Deletes are more likely while the text is longer than `liveTarget`.
    ///
    /// The same `(agents, operations, seed, liveTarget)` always give the same trace. ``finalText``
    /// is nil: the merged text depends on how the engine orders concurrent inserts.
    ///
    /// - Complexity: O(operations) to generate, plus O(transactions × agents) for the version
    ///   vectors (``init(transactions:)``).
    public static func synthetic(agents: Int, operations: Int, seed: UInt64 = 29,
                                 liveTarget: Int? = nil) -> ConcurrentTrace {
        precondition(agents >= 1 && agents <= maxAgents, "1...\(maxAgents) agents")
        let target = liveTarget ?? max(operations / 25, 16)
        var rng = SplitMix64(seed: seed)
        var transactions: [Transaction] = []
        var previousRound: [Int] = []
        var length = 0, done = 0
        var roundAgents: [Int] = []
        while done < operations {
            let k = 1 + rng.below(min(agents, 4))
            roundAgents.removeAll(keepingCapacity: true)
            while roundAgents.count < k {
                let a = rng.below(agents)
                if !roundAgents.contains(a) { roundAgents.append(a) }
            }
            var round: [Int] = []
            var grown = 0
            for (j, agent) in roundAgents.enumerated() {
                // This agent's region of the round's base text: [lo, hi), growing with its edits.
                let lo = length * j / k
                var hi = length * (j + 1) / k
                var patches: [Patch] = []
                for _ in 0 ..< 1 + rng.below(3) {
                    let p = lo + rng.below(hi - lo + 1)
                    let deleting = rng.chance(length + grown > target ? 70 : 30)
                    let d = deleting ? min(hi - p, 1 + rng.below(16)) : 0
                    let t = deleting && d > 0 ? rng.below(2) : 1 + rng.below(16)
                    let text = (0 ..< t).map { _ in UInt8(ascii: "a") + UInt8(rng.below(26)) }
                    patches.append(Patch(position: p, deleteCount: d, text: text))
                    hi += t - d
                    grown += t - d
                    done += d + t
                }
                round.append(transactions.count)
                transactions.append(Transaction(agent: agent, parents: previousRound, patches: patches))
            }
            length += grown
            previousRound = round
        }
        do { return try ConcurrentTrace(transactions: transactions) } catch { preconditionFailure("generated trace: \(error)") }
    }

    /// The trace as JSON Lines, one transaction per line (`[agent, [parents], [[position,
    /// deleteCount, "text"], ...]]`), the format ``init(parsing:)`` reads; text is written as
    /// UTF-8 with `"`, `\` and control characters escaped.
    ///
    /// - Complexity: O(size of the trace).
    public var jsonLines: [UInt8] {
        var out: [UInt8] = []
        func number(_ n: Int) { out.append(contentsOf: Array(String(n).utf8)) }
        for t in transactions {
            out.append(UInt8(ascii: "["))
            number(t.agent)
            out.append(contentsOf: Array(",[".utf8))
            for (k, p) in t.parents.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                number(p)
            }
            out.append(contentsOf: Array("],[".utf8))
            for (k, patch) in t.patches.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "["))
                number(patch.position)
                out.append(UInt8(ascii: ","))
                number(patch.deleteCount)
                out.append(contentsOf: Array(",\"".utf8))
                for c in patch.text {
                    switch c {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), c])
                    case 0 ..< 0x20: out.append(contentsOf: Array(String(format: "\\u%04x", c).utf8))
                    default: out.append(c)
                    }
                }
                out.append(contentsOf: Array("\"]".utf8))
            }
            out.append(contentsOf: Array("]]\n".utf8))
        }
        return out
    }
}
