import ListSyncSimulation

// A generated trace shaped like a version-control history (issue 29's 204-author history is the
// history of one source file): a main line that many agents commit to in turn, and long-lived
// branches, each worked on by one agent for up to hundreds of transactions while the main line
// moves on, then merged back. Unlike ``ConcurrentTrace/synthetic(agents:operations:seed:liveTarget:)``,
// whose concurrency lasts one round, a replica here receives hundreds of concurrent transactions
// at once, and inserts land on both sides of a branch's edits.

extension ConcurrentTrace {
    /// A version-control-like trace of `agents` people for about `operations` element operations,
    /// most of whose text is deleted again (the text stays near `liveTarget` characters, default
    /// 4% of the operations).
    ///
    /// The text is cut into regions (32 in the ``BranchShape/default`` shape; `shape` sets the
    /// numbers of this paragraph). A transaction on the main line (parents: the main line's
    /// last transaction) edits a region no open branch owns. A branch is forked from the main line
    /// by an agent that has no branch open, owns one free region, and is edited only there, by
    /// that agent, for 1 to 400 transactions (parents: the branch's last transaction); then its
    /// agent merges it (parents: the main line's last and the branch's last transaction) with one
    /// more edit of that region. Up to 24 branches are open at once. Each patch deletes runs of 1
    /// to 40 and inserts runs of 1 to 60 lowercase letters. Concurrent transactions never edit the
    /// same region, so none deletes a character another deleted, and the final length is known
    /// without merging (``finalLength``). The same arguments always give the same trace;
    /// ``finalText`` is nil (the merged order of concurrent inserts at a region's edge is the
    /// engine's).
    ///
    /// - Complexity: O(operations + transactions × regions), plus O(transactions × agents) for the
    ///   version vectors (``init(transactions:)``).
    public static func branchy(agents: Int, operations: Int, seed: UInt64 = 29,
                               liveTarget: Int? = nil, shape: BranchShape = .default) -> ConcurrentTrace {
        precondition(agents >= 2 && agents <= maxAgents, "2...\(maxAgents) agents")
        precondition(shape.maxOpen < shape.regions && shape.maxBranchLength >= 1 && shape.maxPatches >= 1
                     && (0...100).contains(shape.forkPercent), "a branch shape with fewer open branches than regions")
        var g = BranchyGenerator(agents: agents, target: liveTarget ?? max(operations / 25, 64), seed: seed, shape: shape)
        while g.done < operations { g.step() }
        g.mergeOpenBranches()
        do { return try ConcurrentTrace(transactions: g.transactions) } catch { preconditionFailure("generated trace: \(error)") }
    }

    /// The length of the text every replica shows after merging a trace of
    /// ``branchy(agents:operations:seed:liveTarget:)`` or ``synthetic(agents:operations:seed:liveTarget:)``
    /// (no two concurrent transactions delete the same character): inserted minus deleted.
    public var finalLength: Int {
        transactions.reduce(0) { sum, t in t.patches.reduce(sum) { $0 + $1.text.count - $1.deleteCount } }
    }
}

/// The shape of ``ConcurrentTrace/branchy(agents:operations:seed:liveTarget:shape:)``'s history.
public struct BranchShape: Sendable, Hashable {
    /// The regions the text is cut into; an open branch owns one, so more than ``maxOpen``.
    public var regions: Int
    /// The most branches open at once.
    public var maxOpen: Int
    /// A branch lives for 1 to this many transactions of its agent.
    public var maxBranchLength: Int
    /// Each transaction makes 1 to this many patches (each up to 40 deletes and 60 inserts).
    public var maxPatches: Int
    /// The chance, in percent, that a step forks a branch (when one may be opened).
    public var forkPercent: Int

    public init(regions: Int, maxOpen: Int, maxBranchLength: Int, maxPatches: Int, forkPercent: Int) {
        (self.regions, self.maxOpen, self.maxBranchLength) = (regions, maxOpen, maxBranchLength)
        (self.maxPatches, self.forkPercent) = (maxPatches, forkPercent)
    }

    /// `W8.branches`: 32 regions, up to 24 branches of 1 to 400 transactions, 1 to 3 patches each.
    public static let `default` = BranchShape(regions: 32, maxOpen: 24, maxBranchLength: 400, maxPatches: 3, forkPercent: 3)

    /// `W8.late` (issue 47): large transactions (1 to 24 patches, hundreds of element operations
    /// on average) on branches forked often from the latest main line and merged late: up to 240
    /// branches open at once (most agents work on one most of the time), each of 1 to 3
    /// transactions of its agent, during which the other branches' agents go on, so a branch
    /// lives for many other transactions; every branch after an agent's first depends on the
    /// main line, which depends on most agents.
    public static let late = BranchShape(regions: 256, maxOpen: 240, maxBranchLength: 3, maxPatches: 24, forkPercent: 20)
}

/// The state of ``ConcurrentTrace/branchy(agents:operations:seed:liveTarget:)``'s generator.
private struct BranchyGenerator {
    struct Branch {
        var agent: Int
        var region: Int
        /// The region lengths as this branch sees them: the main line's at the fork, its own region as edited.
        var lengths: [Int]
        var head: Int?
        var left: Int
    }

    let agents: Int, target: Int, shape: BranchShape
    var rng: SplitMix64
    var main: [Int]
    var mainHead: Int?
    var branches: [Branch] = []
    var busy = Set<Int>()
    var transactions: [ConcurrentTrace.Transaction] = []
    var done = 0

    init(agents: Int, target: Int, seed: UInt64, shape: BranchShape) {
        self.agents = agents
        self.target = target
        self.shape = shape
        main = Array(repeating: 0, count: shape.regions)
        rng = SplitMix64(seed: seed)
    }

    /// One to `shape.maxPatches` patches in region `k` of a text whose regions are `lengths`, which they change.
    mutating func edit(_ lengths: inout [Int], region k: Int) -> [ConcurrentTrace.Patch] {
        let start = lengths[..<k].reduce(0, +)
        let total = lengths.reduce(0, +)
        var length = lengths[k]
        var patches: [ConcurrentTrace.Patch] = []
        for _ in 0 ..< 1 + rng.below(shape.maxPatches) {
            let p = start + rng.below(length + 1)
            let deleting = rng.chance(total > target ? 70 : 30)
            let d = deleting ? min(start + length - p, 1 + rng.below(40)) : 0
            let t = deleting && d > 0 ? rng.below(2) : 1 + rng.below(60)
            patches.append(ConcurrentTrace.Patch(position: p, deleteCount: d,
                                                 text: (0 ..< t).map { _ in UInt8(ascii: "a") + UInt8(rng.below(26)) }))
            length += t - d
            done += d + t
        }
        lengths[k] = length
        return patches
    }

    /// A region no open branch owns, at random.
    mutating func freeRegion() -> Int? {
        let owned = Set(branches.map(\.region))
        let free = (0 ..< shape.regions).filter { !owned.contains($0) }
        return free.isEmpty ? nil : free[rng.below(free.count)]
    }

    mutating func randomIdleAgent() -> Int? {
        guard busy.count < agents else { return nil }
        while true {
            let a = rng.below(agents)
            if !busy.contains(a) { return a }
        }
    }

    mutating func step() {
        let r = rng.below(100)
        if r < shape.forkPercent {
            if branches.count < shape.maxOpen, let k = freeRegion(), let a = randomIdleAgent() {
                busy.insert(a)
                branches.append(Branch(agent: a, region: k, lengths: main, head: mainHead, left: 1 + rng.below(shape.maxBranchLength)))
            }
        } else if !branches.isEmpty && r < max(60, shape.forkPercent + 57) {
            let i = rng.below(branches.count)
            var b = branches[i]
            let patches = edit(&b.lengths, region: b.region)
            transactions.append(.init(agent: b.agent, parents: b.head.map { [$0] } ?? [], patches: patches))
            b.head = transactions.count - 1
            b.left -= 1
            branches[i] = b
            if b.left == 0 { merge(i, patches: nil) }
        } else if let k = freeRegion(), let a = randomIdleAgent() {
            var lengths = main
            let patches = edit(&lengths, region: k)
            main = lengths
            transactions.append(.init(agent: a, parents: mainHead.map { [$0] } ?? [], patches: patches))
            mainHead = transactions.count - 1
        }
    }

    /// Merges branch `i` into the main line with one more edit of its region (or `patches`).
    mutating func merge(_ i: Int, patches: [ConcurrentTrace.Patch]?) {
        let b = branches.remove(at: i)
        var lengths = main
        lengths[b.region] = b.lengths[b.region]
        let edits = patches ?? edit(&lengths, region: b.region)
        main = lengths
        transactions.append(.init(agent: b.agent, parents: [mainHead, b.head].compactMap { $0 }, patches: edits))
        mainHead = transactions.count - 1
        busy.remove(b.agent)
    }

    mutating func mergeOpenBranches() {
        while !branches.isEmpty { merge(0, patches: []) }
    }
}
