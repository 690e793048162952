import Foundation
import ListCRDT
import ListSync
import ListTable
@_spi(Testing) import ListCRDT

/// What a simulation does.
public struct SimulationConfiguration: Sendable {
    /// Number of replicas, fully connected.
    public var replicas = 4
    /// Number of local edits, spread over the replicas at random.
    public var operations = 200
    /// The seed: the same seed and configuration replay the same run exactly.
    public var seed: UInt64 = 1
    /// The network's faults while edits are made (healed and quiet afterwards).
    public var faults = NetworkFaults.standard
    /// Number of partition episodes: each cuts a random link for a random while.
    public var partitions = 2
    /// Percent of edits made as a drag session that receives remote operations before the drop.
    public var dragPercent = 10
    /// Virtual milliseconds between a replica's anti-entropy hellos.
    public var antiEntropyInterval: UInt64 = 60
    /// Virtual milliseconds between edits (drawn from 1 up to this).
    public var editInterval: UInt64 = 8
    /// The mix of edits.
    public var workload = Workload()
    /// A deliberately broken engine, for measuring the simulator's power (tests only).
    @_spi(Testing) public var variant = EngineVariant.correct

    /// The defaults: 4 replicas, 200 edits, standard faults, 2 partitions.
    public init() {}
}

/// What a simulation found.
public struct SimulationReport: Sendable, CustomStringConvertible {
    public var seed: UInt64 = 0
    public var replicas = 0
    /// Edits made (and operations created).
    public var edits = 0, operations = 0, moves = 0, drags = 0
    public var framesSent = 0, framesDelivered = 0, framesDropped = 0, framesDuplicated = 0, bytesSent = 0
    /// Virtual time at the end, in milliseconds.
    public var virtualTime: UInt64 = 0
    /// Anti-entropy rounds needed after healing.
    public var quiescenceRounds = 0
    /// Visible sections and items at the end.
    public var sections = 0, items = 0
    /// Every invariant that failed; empty when the run passed.
    public var failures: [String] = []

    /// Whether every check passed.
    public var passed: Bool { failures.isEmpty }

    public var description: String {
        var lines = [
            "seed \(seed): \(replicas) replicas, \(edits) edits (\(moves) moves, \(drags) drags), \(operations) operations",
            "network: \(framesSent) frames sent, \(framesDelivered) delivered, \(framesDropped) dropped, \(framesDuplicated) duplicated, \(bytesSent) bytes",
            "virtual time \(virtualTime) ms, quiet after \(quiescenceRounds) anti-entropy rounds; final document: \(sections) sections, \(items) items",
        ]
        lines.append(passed ? "result: converged, all invariants hold" : "result: FAILED\n  " + failures.joined(separator: "\n  "))
        return lines.joined(separator: "\n")
    }
}

/// Runs replicas that edit concurrently over an ``InMemoryNetwork`` with faults, then heals the
/// network, runs anti-entropy until quiet, and checks that all replicas converged: the same
/// snapshot and encoded state everywhere, every identity once, nothing live lost (against
/// ``SemanticsOracle``), no operation pending, and every internal invariant.
///
/// Deterministic: a seed replays exactly.
public struct Simulator: Sendable {
    public let configuration: SimulationConfiguration
    private var rng: SplitMix64
    private var network: InMemoryNetwork
    private(set) var documents: [ListDocument]
    private var sessions: [[SyncSession?]]   // sessions[a][b]: a's session with b
    private var report = SimulationReport()
    private var valueCounter = 0

    /// A simulator for one run.
    public init(_ configuration: SimulationConfiguration) {
        self.configuration = configuration
        rng = SplitMix64(seed: configuration.seed)
        network = InMemoryNetwork(seed: configuration.seed ^ 0x5EED, faults: configuration.faults)
        let n = max(1, configuration.replicas)
        documents = (0..<n).map { r in
            var d = ListDocument(replica: ReplicaID(UInt64(r) + 1))
            d.variant = configuration.variant
            return d
        }
        sessions = (0..<n).map { a in (0..<n).map { b in a == b ? nil : SyncSession(local: ReplicaID(UInt64(a) + 1)) } }
        report.seed = configuration.seed
        report.replicas = n
    }

    /// The documents of the replicas (after ``run()``, converged if the run passed).
    public var replicaDocuments: [ListDocument] { documents }

    /// Runs the simulation and checks the result.
    ///
    /// - Complexity: O(k · (r + log n)) for k edits on r replicas, plus anti-entropy.
    public mutating func run() -> SimulationReport {
        let n = documents.count
        for a in 0..<n { for b in 0..<n where a != b { perform(sessions[a][b]!.start(document: documents[a]), at: a, peer: b) } }
        let cuts = (0..<configuration.partitions).map { _ in
            (at: rng.below(max(configuration.operations, 1)), a: rng.below(n), b: rng.below(n), length: 1 + rng.below(max(configuration.operations / 4, 1)))
        }
        var nextTick = configuration.antiEntropyInterval
        var edit = 0
        while edit < configuration.operations {
            let due = network.now + 1 + rng.next() % max(configuration.editInterval, 1)
            deliver(until: due)
            network.advance(to: due)
            if network.now >= nextTick {
                for a in 0..<n { for b in 0..<n where a != b { perform(sessions[a][b]!.tick(document: documents[a]), at: a, peer: b) } }
                nextTick = network.now + configuration.antiEntropyInterval
            }
            for c in cuts where c.a != c.b {
                if c.at == edit { network.partition(c.a, c.b) }
                if c.at + c.length == edit { network.heal(c.a, c.b) }
            }
            let r = rng.below(n)
            if rng.chance(configuration.dragPercent) && documents[r].totalItemCount > 0 {
                drag(at: r)
            } else {
                makeEdit(at: r)
            }
            edit += 1
        }
        quiesce()
        check()
        report.framesSent = network.framesSent
        report.framesDelivered = network.framesDelivered
        report.framesDropped = network.framesDropped
        report.framesDuplicated = network.framesDuplicated
        report.bytesSent = network.bytesSent
        report.virtualTime = network.now
        return report
    }

    // MARK: Steps

    private mutating func makeEdit(at r: Int) {
        let before = documents[r].operationCount
        let edit = RandomEdit.random(for: documents[r], workload: configuration.workload, using: &rng) {
            valueCounter += 1
            return "v\(valueCounter)"
        }
        report.edits += 1
        if edit.isMove { report.moves += 1 }
        do {
            try edit.apply(to: &documents[r])
        } catch {
            report.failures.append("replica \(r): \(edit) threw \(error)")
            return
        }
        broadcast(from: r, since: before)
    }

    /// A drag session on replica `r`: lift a random item, hover a few times while remote
    /// operations arrive, then drop (one operation, or none if cancelled or dropped in place).
    private mutating func drag(at r: Int) {
        report.edits += 1
        report.drags += 1
        let before = documents[r].operationCount
        var session = DragSession()
        let shape = (0..<documents[r].sectionCount).map { (try? documents[r].itemCount(inSection: $0)) ?? 0 }
        var k = rng.below(documents[r].totalItemCount)
        var start = IndexPath(item: 0, section: 0)
        for (s, rows) in shape.enumerated() {
            if k < rows { start = IndexPath(item: k, section: s); break }
            k -= rows
        }
        do {
            try session.begin(at: start, in: documents[r])
            for _ in 0..<(1 + rng.below(4)) {
                deliver(until: network.now + 1 + rng.next() % max(configuration.editInterval, 1))
                session.documentDidChange(documents[r])
                guard session.isDragging else { break }
                let visible = session.visibleSnapshot
                let s = rng.below(visible.numberOfSections)
                let rows = visible.sections[s].items.count
                let target = IndexPath(item: rng.below(rows + 1), section: s)
                if (try? session.update(to: target)) == nil {
                    try? session.update(to: IndexPath(item: max(rows - 1, 0), section: s))
                }
            }
            if session.isDragging {
                _ = try session.drop(into: &documents[r])
                report.moves += 1
            }
        } catch {
            report.failures.append("replica \(r): drag from \(start) failed: \(error)")
            return
        }
        broadcast(from: r, since: before)
    }

    /// Sends replica `r`'s operations from log position `before` on to every peer.
    private mutating func broadcast(from r: Int, since before: Int) {
        let made: [ListOperation]
        do { made = try documents[r].operations(from: before) } catch {
            report.failures.append("replica \(r): \(error)")
            return
        }
        report.operations += made.count
        for b in 0..<documents.count where b != r { perform(sessions[r][b]!.forward(made), at: r, peer: b) }
    }

    /// Delivers every frame due by `deadline`.
    private mutating func deliver(until deadline: UInt64) {
        while let d = network.nextDelivery(until: deadline) {
            do {
                let actions = try sessions[d.to][d.from]!.receive(d.frame, document: documents[d.to])
                perform(actions, at: d.to, peer: d.from)
            } catch {
                report.failures.append("replica \(d.to) refused a frame from \(d.from): \(error)")
            }
        }
    }

    private mutating func perform(_ actions: [SyncAction], at r: Int, peer: Int) {
        for action in actions {
            switch action {
            case let .send(frame): network.send(from: r, to: peer, frame)
            case let .deliver(ops):
                for op in ops {
                    do { try documents[r].receive(op) } catch {
                        report.failures.append("replica \(r) rejected an operation from \(peer): \(error)")
                    }
                }
                // As `Replica` does: operations still waiting for their causes ask this peer for the gap.
                perform(sessions[r][peer]!.requestMissing(document: documents[r]), at: r, peer: peer)
            }
        }
    }

    /// Heals the network, stops faults, and runs anti-entropy until every replica has everything.
    private mutating func quiesce() {
        network.healAll()
        network.faults = NetworkFaults(latency: configuration.faults.latency)
        let n = documents.count
        for round in 1...50 {
            deliver(until: .max)
            if documents.allSatisfy({ $0.version == documents[0].version && $0.pendingCount == 0 }) {
                report.quiescenceRounds = round - 1
                return
            }
            for a in 0..<n { for b in 0..<n where a != b { perform(sessions[a][b]!.tick(document: documents[a]), at: a, peer: b) } }
        }
        report.failures.append("replicas did not become quiet after 50 anti-entropy rounds")
    }

    private mutating func check() {
        let reference = documents[0].snapshot()
        let state = documents[0].encodedState()
        for (r, doc) in documents.enumerated() {
            if doc.pendingCount != 0 { report.failures.append("replica \(r) has \(doc.pendingCount) operations pending") }
            do { try doc.checkInvariants() } catch { report.failures.append("replica \(r): \(error)") }
            if r > 0 && doc.snapshot() != reference { report.failures.append("replica \(r) shows a different document than replica 0") }
            if r > 0 && doc.encodedState() != state { report.failures.append("replica \(r) has a different encoded state than replica 0") }
        }
        let all = documents[0].operations
        if let why = SemanticsOracle(all).check(reference) { report.failures.append("replica 0: \(why)") }
        var values = Set<[UInt8]>()
        for section in reference.sections {
            for item in section.items where !values.insert(Array(item.value)).inserted {
                report.failures.append("value \(String(decoding: item.value, as: UTF8.self)) is shown twice")
            }
        }
        report.sections = reference.numberOfSections
        report.items = reference.numberOfItems
    }
}
