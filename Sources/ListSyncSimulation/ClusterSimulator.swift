import ListCRDT
import ListSyncRandom
@_spi(Testing) import ListSync

/// What a cluster run is made of (`listsync simulate --cluster N`).
public struct ClusterSimulationConfiguration: Sendable {
    /// Cluster nodes, each with its own copy of the document and its ``ClusterMachine``.
    public var nodes = 3
    /// Edits made in all, each on a random live node.
    public var operations = 200
    /// The first seed.
    public var seed: UInt64 = 1
    /// Percent of requests to the server (publishes, key-value reads and writes, purges) whose
    /// answer is lost: half of them were done, half were not.
    public var lossPercent = 10
    /// Percent of publish acknowledgements delivered twice.
    public var duplicatePercent = 10
    /// Node kills (each restarted later, its disk kept: the document and its read checkpoint).
    public var nodeKills = 3
    /// Kills of the NATS server (the stream and the bucket keep what they acknowledged).
    public var serverKills = 2
    /// Messages read after which the lease holder snapshots and trims.
    public var trimMessages = 8
    /// The lease's duration (virtual ms): short, so that leases lapse and are contended.
    public var leaseMilliseconds: UInt64 = 120
    /// How long a node follows after its last interest (virtual ms).
    public var interestGraceMilliseconds: UInt64 = 80
    /// How long the stream remembers a message id (virtual ms).
    public var duplicateWindowMilliseconds: UInt64 = 150
    /// The machine variant (tests of the simulator's power only).
    @_spi(Testing) public var variant = ClusterMachine.Variant.correct
    /// Steps after the faults end to bring everything to rest (a count, not a time).
    public var healSteps = 60_000

    /// The defaults above.
    public init() {}

    /// The command line that replays this run.
    public var replayArguments: String {
        "--cluster \(nodes) --ops \(operations) --seed \(seed) --loss \(lossPercent) --duplicate \(duplicatePercent) --crashes \(nodeKills) --server-kills \(serverKills) --trim-after \(trimMessages)"
    }
}

/// What a cluster run did, and what its oracle found.
public struct ClusterSimulationReport: Sendable, CustomStringConvertible {
    public var seed: UInt64 = 0
    public var nodes = 0
    /// Edits made, and the operations clients were told were acknowledged (in the stream).
    public var edits = 0, acknowledged = 0
    /// Faults injected.
    public var nodeKills = 0, serverKills = 0, answersLost = 0, acknowledgementsDuplicated = 0, redeliveries = 0
    /// What the machines did, summed over every node's incarnations.
    public var published = 0, snapshots = 0, trims = 0, trimsSkipped = 0, snapshotsLoaded = 0, republishes = 0
    public var duplicateAcknowledgementsIgnored = 0, duplicateMessagesIgnored = 0
    /// Lease takes (a node won a lease another node held or had held).
    public var leaseTakes = 0
    /// Messages the stream stored twice (a retry after the window), and purged.
    public var duplicatesStored = 0, purged = 0
    /// Steps the heal took.
    public var healSteps = 0
    /// Visible items at the end.
    public var items = 0
    /// What the oracle found wrong (empty: passed).
    public var failures: [String] = []

    /// An empty report (counts summed into it).
    public init() {}

    /// Whether the oracle found nothing wrong.
    public var passed: Bool { failures.isEmpty }

    public var description: String {
        var s = "seed \(seed): \(passed ? "passed" : "FAILED") — \(nodes) nodes, \(edits) edits, \(acknowledged) acknowledged, \(items) items; "
        s += "faults: \(nodeKills) node kills, \(serverKills) server kills, \(answersLost) answers lost, \(acknowledgementsDuplicated) acks duplicated, \(redeliveries) redeliveries; "
        s += "machines: \(published) published, \(snapshots) snapshots, \(trims) trims (\(purged) messages), \(trimsSkipped) trims skipped, \(snapshotsLoaded) snapshots loaded, \(republishes) republishes, \(leaseTakes) lease takes, \(duplicateAcknowledgementsIgnored)+\(duplicateMessagesIgnored) duplicates ignored; heal \(healSteps) steps"
        for f in failures.prefix(10) { s += "\n  ✘ \(f)" }
        return s
    }
}

/// N cluster nodes, each the production ``ClusterMachine`` over its own document, sharing a
/// ``SimulatedJetStream`` on a virtual clock driven by the seed; answers lost and duplicated,
/// leases contended, nodes and the server killed. Then the faults end, every node restarts and
/// takes interest, the run goes on until everything rests, and the oracle checks: nothing
/// acknowledged lost, every copy the same, each operation and each value once, every invariant.
public struct ClusterSimulator {
    let configuration: ClusterSimulationConfiguration
    var rng: SplitMix64
    var now: UInt64 = 0
    var stream: SimulatedJetStream
    var nodes: [ClusterSimNode] = []
    var pending: [ClusterSimCompletion] = []
    var report = ClusterSimulationReport()
    var nextTicket: UInt64 = 1
    var valueCounter = 0
    /// The operations clients were told were acknowledged.
    var acknowledged: [ListOperation] = []
    /// Whether the cluster's loss of an acknowledged operation was reported (once a run).
    var clusterLostReported = false
    /// Whether faults are still injected (off once the heal begins).
    var faulty = true
    static let ms: UInt64 = 1_000_000

    /// A run of `configuration`.
    public init(_ configuration: ClusterSimulationConfiguration) {
        precondition(configuration.nodes >= 1, "a cluster has a node")
        self.configuration = configuration
        rng = SplitMix64(seed: configuration.seed, streams: [0xC1_05_7E_12])
        stream = SimulatedJetStream(duplicateWindow: configuration.duplicateWindowMilliseconds * Self.ms)
        var machine = ClusterMachine.Configuration()
        machine.trimMessages = configuration.trimMessages
        machine.leaseDuration = configuration.leaseMilliseconds * Self.ms
        machine.interestGrace = configuration.interestGraceMilliseconds * Self.ms
        machine.retryFirst = 5 * Self.ms
        machine.retryMax = 40 * Self.ms
        machine.maxPayload = 96
        for n in 0..<configuration.nodes {
            nodes.append(ClusterSimNode(index: n, replica: ReplicaID(UInt64(n) + 1), machine: machine, variant: configuration.variant))
        }
        report.seed = configuration.seed
        report.nodes = configuration.nodes
    }

    /// Runs the edits with faults, heals, and checks.
    ///
    /// - Complexity: O(edits × nodes) steps, each O(document) at worst.
    public mutating func run() -> ClusterSimulationReport {
        for n in nodes.indices { start(n) }
        var faultsLeft = (kills: configuration.nodeKills, server: configuration.serverKills)
        var edits = 0
        var steps = 0
        while edits < configuration.operations || !pending.isEmpty && steps < configuration.operations * 40 {
            steps += 1
            let roll = rng.below(100)
            switch roll {
            case 0..<25 where edits < configuration.operations:
                if edit() { edits += 1 }
            case 25..<55: completeNext()
            case 55..<75: deliverMessage()
            case 75..<92: tickRandom()
            case 92..<95: toggleInterest()
            case 95..<97 where faultsLeft.kills > 0 && edits > 0:
                if killRandomNode() { faultsLeft.kills -= 1 }
            case 97 where faultsLeft.server > 0 && stream.isUp && edits > 0:
                killServer()
                faultsLeft.server -= 1
            default:
                restartSomething()
            }
        }
        heal()
        check()
        return report
    }

    // MARK: Steps

    /// Makes a random edit on a random live node: durable there at once (its disk), then handed
    /// to its machine as a client's batch.
    mutating func edit() -> Bool {
        let live = nodes.indices.filter { nodes[$0].alive }
        guard !live.isEmpty else { return false }
        let n = live[rng.below(live.count)]
        valueCounter += 1
        let value = "v\(valueCounter)"
        var workload = Workload()
        workload.fieldWrites = 0
        let e = RandomEdit.random(for: nodes[n].document, workload: workload, using: &rng, fresh: { value })
        guard let op = try? e.apply(to: &nodes[n].document) else { return false }
        let ticket = nextTicket
        nextTicket += 1
        nodes[n].waiting[ticket] = op
        report.edits += 1
        handle(n, .appended(ticket: ticket, [op]))
        return true
    }

    mutating func tickRandom() {
        now += UInt64(1 + rng.below(20)) * Self.ms
        let live = nodes.indices.filter { nodes[$0].alive }
        guard !live.isEmpty else { return }
        let n = live[rng.below(live.count)]
        tick(n)
    }

    mutating func tick(_ n: Int) {
        handle(n, .tick(now: now, durable: nodes[n].document.version, subscribed: nodes[n].subscribed))
    }

    mutating func toggleInterest() {
        let n = rng.below(nodes.count)
        nodes[n].subscribed.toggle()
        if nodes[n].subscribed && nodes[n].alive { handle(n, .interest(now: now)) }
    }

    /// Kills a live node: its machine and what it had in flight are gone; its disk stays.
    mutating func killRandomNode() -> Bool {
        let live = nodes.indices.filter { nodes[$0].alive }
        guard !live.isEmpty else { return false }
        let n = live[rng.below(live.count)]
        nodes[n].alive = false
        nodes[n].consumer = nil
        nodes[n].waiting = [:]
        report.nodeKills += 1
        nodes[n].absorbCounts()
        return true
    }

    /// Kills the server: every consumer ends; requests in flight fail when they arrive.
    mutating func killServer() {
        stream.isUp = false
        report.serverKills += 1
        for n in nodes.indices where nodes[n].alive && nodes[n].consumer != nil {
            nodes[n].consumer = nil
            handle(n, .consumerLost)
        }
    }

    /// Restarts the server or a dead node, if any.
    mutating func restartSomething() {
        if !stream.isUp, rng.chance(50) {
            stream.isUp = true
            // The connection came back: heads written meanwhile were not heard.
            for n in nodes.indices where nodes[n].alive { handle(n, .headWritten) }
            return
        }
        let dead = nodes.indices.filter { !nodes[$0].alive }
        guard !dead.isEmpty, rng.chance(30) else { return }
        start(dead[rng.below(dead.count)])
    }

    /// Starts (or restarts) node `n` from its disk: a new machine from its read checkpoint.
    mutating func start(_ n: Int) {
        nodes[n].alive = true
        nodes[n].incarnation += 1
        nodes[n].machine = nodes[n].makeMachine()
        let unpublished = !(nodes[n].checkpoint?.version.includes(nodes[n].document.version) ?? (nodes[n].document.version == VersionVector()))
        handle(n, .started(mayHoldUnpublished: unpublished, now: now))
        if nodes[n].subscribed { handle(n, .interest(now: now)) }
    }

    /// Delivers the next message of a random following node's consumer (sometimes the one
    /// before again: a redelivery).
    mutating func deliverMessage() {
        guard stream.isUp else { return }
        let following = nodes.indices.filter { nodes[$0].alive && nodes[$0].consumer != nil }
        guard !following.isEmpty else { return }
        let n = following[rng.below(following.count)]
        guard let next = nodes[n].consumer, let m = stream.message(from: next) else { return }
        if faulty, let last = nodes[n].lastDelivered, rng.chance(configuration.duplicatePercent / 2) {
            report.redeliveries += 1
            handle(n, .message(sequence: last.sequence, operations: last.operations))
            return
        }
        nodes[n].consumer = m.sequence + 1
        nodes[n].lastDelivered = m
        handle(n, .message(sequence: m.sequence, operations: m.operations))
    }

    /// Feeds `event` to node `n`'s machine and does its actions.
    mutating func handle(_ n: Int, _ event: ClusterMachine.Event) {
        guard nodes[n].alive else { return }
        var queue = nodes[n].machine.handle(event)
        var i = 0
        while i < queue.count {
            queue += perform(n, queue[i])
            i += 1
        }
    }

    // MARK: Heal

    /// Ends the faults: the server and every node run, every node is interested; steps until
    /// everything rests (bounded by a count).
    mutating func heal() {
        faulty = false
        if !stream.isUp {
            stream.isUp = true
            for n in nodes.indices where nodes[n].alive { handle(n, .headWritten) }
        }
        for n in nodes.indices where !nodes[n].alive { start(n) }
        for n in nodes.indices {
            nodes[n].subscribed = true
            handle(n, .interest(now: now))
        }
        var steps = 0
        while steps < configuration.healSteps {
            steps += 1
            if !pending.isEmpty, rng.chance(60) { completeNext(); continue }
            if rng.chance(50) { deliverMessage(); continue }
            now += UInt64(1 + rng.below(10)) * Self.ms
            for n in nodes.indices { tick(n) }
            if steps % 16 == 0, isAtRest { break }
        }
        report.healSteps = steps
    }

    /// Nothing in flight but the lease's upkeep (a holder renews it for as long as it follows),
    /// nothing to publish, every node following and read to the stream's end.
    var isAtRest: Bool {
        guard stream.isUp, pending.allSatisfy(\.isLeaseUpkeep) else { return false }
        for node in nodes {
            guard node.alive, node.machine.isFollowing, node.machine.publishesPending == 0,
                  (node.consumer ?? 0) > stream.lastBySubject else { return false }
        }
        return true
    }
}
