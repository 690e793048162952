import Testing
@testable import ListSync
import ListSyncSimulation

@Suite struct InMemoryNetworkTests {
    static func trace(seed: UInt64, faults: NetworkFaults) -> [String] {
        var net = InMemoryNetwork(seed: seed, faults: faults)
        var out: [String] = []
        for k in 0..<200 { net.send(from: k % 3, to: (k + 1) % 3, [UInt8(k & 0xff)]) }
        while let d = net.nextDelivery() { out.append("\(d.time):\(d.from)>\(d.to):\(d.frame[0])") }
        return out
    }

    @Test("a seed replays the same deliveries; delay reorders frames")
    func replay() {
        let a = Self.trace(seed: 9, faults: .standard), b = Self.trace(seed: 9, faults: .standard)
        #expect(a == b)
        #expect(a != Self.trace(seed: 10, faults: .standard))
        let order = a.map { Int($0.split(separator: ":").last!)! }
        #expect(order != order.sorted(), "frames were reordered")
    }

    @Test("loss and duplication happen at about the configured rates")
    func rates() {
        var net = InMemoryNetwork(seed: 1, faults: NetworkFaults(latency: 1...5, lossPercent: 10, duplicatePercent: 20))
        for _ in 0..<10_000 { net.send(from: 0, to: 1, [1]) }
        #expect((800...1_200).contains(net.framesDropped))
        #expect((1_500...2_100).contains(net.framesDuplicated))
        var delivered = 0
        while net.nextDelivery() != nil { delivered += 1 }
        #expect(delivered == 10_000 - net.framesDropped + net.framesDuplicated)
    }

    @Test("a partition drops frames both ways until healed, including frames already on the way")
    func partitions() {
        var net = InMemoryNetwork(seed: 3, faults: NetworkFaults(latency: 10...10))
        net.send(from: 0, to: 1, [1])
        net.partition(1, 0)
        net.send(from: 1, to: 0, [2])
        #expect(net.nextDelivery() == nil)
        #expect(net.framesDropped == 2)
        net.heal(0, 1)
        net.send(from: 0, to: 1, [3])
        #expect(net.nextDelivery()?.frame == [3])
    }

    @Test("no frame arrives before its deadline; the clock only moves forward")
    func clock() {
        var net = InMemoryNetwork(seed: 4, faults: NetworkFaults(latency: 50...50))
        net.send(from: 0, to: 1, [1])
        #expect(net.nextDelivery(until: 49) == nil)
        #expect(net.now == 0)
        #expect(net.nextDelivery(until: 50)?.time == 50)
        net.advance(to: 10)
        #expect(net.now == 50)
    }
}
