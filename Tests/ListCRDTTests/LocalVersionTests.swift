import Testing
@testable import ListCRDT

/// `LocalVersion`: the arithmetic the engine uses, and the stored layouts it must not grow.
@Suite struct LocalVersionTests {
    @Test("none, exists, advanced(by:), distance(from:) and order")
    func arithmetic() {
        let a = LocalVersion(7)
        #expect(!LocalVersion.none.exists && LocalVersion.none.raw == -1)
        #expect(a.exists && LocalVersion(0).exists && a.int == 7)
        #expect(a.advanced(by: 3) == LocalVersion(10) && a.advanced(by: Int32(-1)) == LocalVersion(6))
        #expect(a.advanced(by: 5).distance(from: a) == 5 && a.distance(from: a.advanced(by: 2)) == -2)
        #expect(LocalVersion.none < LocalVersion(0) && LocalVersion(0) < a)
        #expect(a.description == "7")
    }

    @Test("typed local versions keep the stored layouts (a slot 8 bytes, an entry 8, an entity row 32)")
    func layouts() {
        #expect(MemoryLayout<LocalVersion>.size == 4 && MemoryLayout<LocalVersion>.stride == 4)
        #expect(MemoryLayout<SlotStore.Slot>.stride == 8)
        #expect(MemoryLayout<EntityTable.Row>.stride == 32)
        #expect(MemoryLayout<SlotForest.Entry>.stride == 8)
    }
}
