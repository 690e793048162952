import Foundation

// The heap bytes a document's tables hold, table by table (issue 29: where the bytes per
// operation of history go). Counted as capacity × stride of each array, plus the heap blocks of
// the values and dependency lists they point to; allocator headers and slack are not counted, so
// the total is a little under what the process holds for the document.

/// One table's part of ``ListDocument/memoryBreakdown``.
@_spi(Testing) public struct MemoryPart: Sendable, Equatable {
    /// The table, as `owner.field` (for example `log.records`).
    public var name: String
    /// Its elements (or entries).
    public var count: Int
    /// Its heap bytes: capacity × stride, plus what the elements point to.
    public var bytes: Int
}

extension ListDocument {
    /// The heap bytes of each of the document's tables, largest first.
    ///
    /// - Complexity: O(tables + values written over and explicit dependency lists).
    @_spi(Testing) public var memoryBreakdown: [MemoryPart] {
        var parts: [MemoryPart] = []
        parts += log.memoryParts
        parts += slots.memoryParts
        parts += forest.memoryParts
        parts += sections.memoryParts(prefix: "sections")
        parts += items.memoryParts(prefix: "items")
        parts += buffer.memoryParts
        parts.append(MemoryPart(name: "records", count: records.materialized.count, bytes: records.heapBytes))
        return parts.sorted { $0.bytes > $1.bytes }
    }
}

/// The part of an array: its count, and capacity × stride bytes plus `extra`.
@inline(__always)
func memoryPart<T>(_ name: String, _ array: [T], extra: Int = 0) -> MemoryPart {
    MemoryPart(name: name, count: array.count, bytes: array.capacity * MemoryLayout<T>.stride + extra)
}

/// Heap bytes of a ``Data`` value's own storage (none for up to 14 bytes, kept inline).
func heapBytes(_ value: Data) -> Int { value.count > 14 ? value.count : 0 }

extension OpLog {
    var memoryParts: [MemoryPart] {
        [memoryPart("log.records", records), memoryPart("log.seenSlots", seenSlots),
         memoryPart("log.depIDs", depIDs), memoryPart("log.depStarts", depStarts),
         MemoryPart(name: "log.byReplica", count: byReplica.count,
                    bytes: byReplica.reduce(byReplica.capacity * MemoryLayout<[Int32]>.stride) {
                        $0 + $1.capacity * MemoryLayout<Int32>.stride
                    })] + others.memoryParts
    }
}

extension SlotStore {
    var memoryParts: [MemoryPart] {
        [memoryPart("slots.runs", runs), memoryPart("slots.slots", slots),
         MemoryPart(name: "slots.idRuns", count: idRuns.reduce(0) { $0 + $1.count },
                    bytes: idRuns.reduce(idRuns.capacity * MemoryLayout<[IDRun]>.stride) {
                        $0 + $1.capacity * MemoryLayout<IDRun>.stride
                    })]
    }
}

extension SlotForest {
    var memoryParts: [MemoryPart] {
        [memoryPart("forest.entries", entries), memoryPart("forest.leaves", leaves),
         memoryPart("forest.nodes", nodes), memoryPart("forest.links", links),
         MemoryPart(name: "forest.leafOf", count: leafOf.count, bytes: leafOf.heapBytes)]
    }
}

extension EntityTable {
    func memoryParts(prefix: String) -> [MemoryPart] {
        [memoryPart("\(prefix).rows", rows), memoryPart("\(prefix).registers", registers),
         MemoryPart(name: "\(prefix).insertValues", count: insertValues.count, bytes: insertValues.heapBytes),
         MemoryPart(name: "\(prefix).replaced", count: replaced.count,
                    bytes: replaced.capacity * (MemoryLayout<EntityIndex>.stride + MemoryLayout<Replaced>.stride)
                        + replaced.values.reduce(0) { $0 + heapBytes($1.value) })]
    }
}
