import Testing
@testable import ListCRDT

/// `VersionVector` keeps a hint (the replica observed last) that is not part of its value.
@Suite struct VersionVectorTests {
    @Test("vectors with the same counters are equal and hash alike, whatever order they were observed in")
    func equalityIgnoresTheHint() {
        let a = ReplicaID(1), b = ReplicaID(2), c = ReplicaID(3)
        var x = VersionVector(), y = VersionVector()
        for id in [OpID(counter: 4, replica: a), OpID(counter: 2, replica: c), OpID(counter: 9, replica: b)] { x.observe(id) }
        for id in [OpID(counter: 9, replica: b), OpID(counter: 4, replica: a), OpID(counter: 1, replica: c),
                   OpID(counter: 2, replica: c), OpID(counter: 3, replica: a)] { y.observe(id) }
        #expect(x == y)
        #expect(x.hashValue == y.hashValue)
        #expect(Set([x, y]).count == 1)
        #expect(x.counters == [a: 4, b: 9, c: 2])
    }

    @Test("observe raises only, through the hint or the search, for new and known replicas")
    func observeRaisesOnly() {
        let a = ReplicaID(5), b = ReplicaID(2)
        var v = VersionVector()
        v.observe(OpID(counter: 3, replica: a))
        v.observe(OpID(counter: 2, replica: a))  // lower, through the hint
        #expect(v[a] == 3)
        v.observe(OpID(counter: 7, replica: b))  // new, sorts before a: a's index moves
        v.observe(OpID(counter: 4, replica: a))  // the hint is stale, the search finds it
        v.observe(OpID(counter: 1, replica: b))
        #expect(v.entries.map(\.replica) == [b, a])
        #expect(v[a] == 4 && v[b] == 7)
        #expect(v.contains(OpID(counter: 4, replica: a)) && !v.contains(OpID(counter: 5, replica: a)))
    }
}
