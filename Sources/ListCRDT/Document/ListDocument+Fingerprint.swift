import Foundation

extension ListDocument {
    /// A canonical encoding of the whole replicated state: every slot of every sequence in order
    /// (hidden ones too) with what it holds and whether it shows, every register, and the version.
    ///
    /// It depends only on the set of operations applied, never on the order they arrived in or on
    /// the replica: two replicas that applied the same operations give the same bytes. Tests and
    /// simulations compare it; it is not a storage format.
    ///
    /// - Complexity: O(n log n) for n slots.
    public func encodedState() -> [UInt8] {
        var out = WireWriter()
        func put(_ v: UInt64) { out.varint(v) }
        func put(_ id: OpID) { put(id.counter); put(id.replica.rawValue) }
        func putSequence(_ tree: Int32, holders: EntityTable) {
            out.count(forest.count(tree))
            forest.forEachRun(tree) { lv, n, visible in
                for k in 0..<Int32(n) {
                    put(slots.id(of: lv + k))
                    put(holders.rows[Int(slots.entity(of: lv + k))].id)
                    out.byte(visible ? 1 : 0)
                }
            }
        }
        func putEntity(_ t: EntityTable, _ e: Int32) {
            put(t.rows[Int(e)].id); put(t.winnerID(e)); put(t.deleted(e))
            put(t.valueWrite(e)); out.data(t.value[Int(e)])
        }
        out.bytes.append(contentsOf: Array("LSST1".utf8))
        for (r, c) in versionVector.counters.sorted(by: { $0.key < $1.key }) { put(r.rawValue); put(c) }
        putSequence(Self.sectionTree, holders: sections)
        let order = (0..<Int32(sections.count)).sorted { sections.rows[Int($0)].id < sections.rows[Int($1)].id }
        for s in order {
            putEntity(sections, s)
            putSequence(tree(ofSequence: .items(s)), holders: items)
        }
        for i in (0..<Int32(items.count)).sorted(by: { items.rows[Int($0)].id < items.rows[Int($1)].id }) {
            putEntity(items, i)
        }
        return out.bytes
    }
}
