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
                    put(slots.id(of: lv.advanced(by: k)))
                    put(holders.rows[slots.entity(of: lv.advanced(by: k)).int].id)
                    out.byte(visible ? 1 : 0)
                }
            }
        }
        func putEntity(_ t: EntityTable, _ e: EntityIndex) {
            put(t.rows[e.int].id); put(t.winnerID(e)); put(t.deleted(e))
            put(t.valueWrite(e)); out.data(t.value(e))
        }
        out.bytes.append(contentsOf: Array("LSST1".utf8))
        for (r, c) in versionVector.counters.sorted(by: { $0.key < $1.key }) { put(r.rawValue); put(c) }
        putSequence(Self.sectionTree, holders: sections)
        let order = sections.indices.sorted { sections.rows[$0.int].id < sections.rows[$1.int].id }
        for s in order {
            putEntity(sections, s)
            putSequence(tree(ofSequence: .items(s)), holders: items)
        }
        for i in items.indices.sorted(by: { items.rows[$0.int].id < items.rows[$1.int].id }) {
            putEntity(items, i)
        }
        return out.bytes
    }
}
