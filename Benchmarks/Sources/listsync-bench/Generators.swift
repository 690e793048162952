import Foundation
import ListCRDT
import ListSync
import ListSyncSimulation

// Untimed operation generation, identical to Benchmarks/compare/peers.py (same SplitMix64 draws,
// in the same order), plus the plain-array models the workloads verify against.

/// Integer values are stored as their unsigned LEB128 bytes (1-2 bytes for the values used here).
func intValue(_ v: Int) -> Data {
    var x = UInt64(v)
    var bytes: [UInt8] = []
    repeat {
        var b = UInt8(x & 0x7F)
        x >>= 7
        if x != 0 { b |= 0x80 }
        bytes.append(b)
    } while x != 0
    return Data(bytes)
}

func intOf(_ d: Data) -> Int {
    var v: UInt64 = 0
    var shift: UInt64 = 0
    for b in d {
        v |= UInt64(b & 0x7F) << shift
        shift += 7
    }
    return Int(v)
}

/// One-character values of the trace: one Data per byte value, made once.
let byteValues: [Data] = (0..<256).map { Data([UInt8($0)]) }

/// W1.random: (is insert, position, value = op index k).
struct FlatOp {
    var insert: Bool
    var pos: Int
    var value: Int
}

func genRandom(n: Int, count: Int = 10_000, seed: UInt64 = 1) -> [FlatOp] {
    var rng = SplitMix64(seed: seed)
    var len = n
    var ops: [FlatOp] = []
    ops.reserveCapacity(count)
    for k in 0..<count {
        let insert = rng.next() % 2 == 0 || len == 0
        if insert {
            ops.append(FlatOp(insert: true, pos: rng.below(len + 1), value: k))
            len += 1
        } else {
            ops.append(FlatOp(insert: false, pos: rng.below(len), value: k))
            len -= 1
        }
    }
    return ops
}

func applyFlat(_ model: inout [Int], _ ops: [FlatOp]) {
    for op in ops {
        if op.insert { model.insert(op.value, at: op.pos) } else { model.remove(at: op.pos) }
    }
}

/// W4: (from, to) moves of a list of n items and the expected final list.
func genMoves(n: Int, count: Int, seed: UInt64) -> (ops: [(from: Int, to: Int)], expected: [Int]) {
    var rng = SplitMix64(seed: seed)
    var model = Array(0..<n)
    var ops: [(from: Int, to: Int)] = []
    ops.reserveCapacity(count)
    for _ in 0..<count {
        let f = rng.below(n)
        let t = rng.below(n)
        let v = model.remove(at: f)
        model.insert(v, at: t)
        ops.append((f, t))
    }
    return (ops, model)
}

/// W5: a section move (from, to) or an item move (s, from) -> (d, to).
enum SectionOp {
    case section(from: Int, to: Int)
    case item(s: Int, from: Int, d: Int, to: Int)
}

func genSections(sections: Int = 100, per: Int = 100, count: Int = 100_000, seed: UInt64 = 5)
    -> (ops: [SectionOp], expected: [[Int]])
{
    var rng = SplitMix64(seed: seed)
    var model = (0..<sections).map { s in (0..<per).map { s * per + $0 } }
    var ops: [SectionOp] = []
    ops.reserveCapacity(count)
    for _ in 0..<count {
        if rng.below(10) == 0 {
            let f = rng.below(sections)
            let t = rng.below(sections)
            model.insert(model.remove(at: f), at: t)
            ops.append(.section(from: f, to: t))
        } else {
            var s = rng.below(sections)
            while model[s].isEmpty { s = rng.below(sections) }
            let f = rng.below(model[s].count)
            let d = rng.below(sections)
            let t = d != s ? rng.below(model[d].count + 1) : rng.below(model[s].count)
            let v = model[s].remove(at: f)
            model[d].insert(v, at: t)
            ops.append(.item(s: s, from: f, d: d, to: t))
        }
    }
    return (ops, model)
}

/// The values of section 0 (or of every section) as integers / bytes.
func intValues(_ doc: ListDocument, section: Int = 0) -> [Int] {
    doc.snapshot().sections[section].items.map { intOf($0.value) }
}

func allSectionValues(_ doc: ListDocument) -> [[Int]] {
    doc.snapshot().sections.map { $0.items.map { intOf($0.value) } }
}

func textBytes(_ doc: ListDocument) -> [UInt8] {
    var out: [UInt8] = []
    for item in doc.snapshot().sections.first?.items ?? [] { out.append(contentsOf: item.value) }
    return out
}

/// A one-section document of `n` items with values 0..<n, by single inserts at the end (ListCRDT
/// has no bulk insert).
func buildList(replica: UInt64, n: Int) throws -> ListDocument {
    var doc = ListDocument(replica: ReplicaID(replica))
    try doc.insertSection(at: 0)
    for i in 0..<n { try doc.insertItem(at: IndexPath(item: i, section: 0), value: intValue(i)) }
    return doc
}

/// W7: the positions of n random inserts into an empty list (SplitMix64(seed 7): insert k goes at
/// `below(k + 1)`), the value byte of insert k (`a` + k % 26), and the delivery orders of the n + 1
/// operations (0 = the section, 1 + k = insert k): reverse = n, n-1, ..., 0; shuffled = a
/// Fisher-Yates shuffle of 0...n by SplitMix64(seed 77) (for i from n down to 1: swap i with
/// `below(i + 1)`).
func genOutOfOrder(n: Int) -> (positions: [Int], values: [UInt8], reverse: [Int], shuffled: [Int]) {
    var rng = SplitMix64(seed: 7)
    let positions = (0..<n).map { rng.below($0 + 1) }
    let values = (0..<n).map { UInt8(97 + $0 % 26) }
    var shuffled = Array(0...n)
    var srng = SplitMix64(seed: 77)
    for i in stride(from: n, to: 0, by: -1) { shuffled.swapAt(i, srng.below(i + 1)) }
    return (positions, values, Array((0...n).reversed()), shuffled)
}

/// W12.churn: `count` inserts and deletes on a list of `live` items that stays near `live` items
/// (SplitMix64(seed 12)). Op k: insert when the list is empty or `below(2 * live) >= len` (so the
/// chance of an insert falls as the list grows past `live`), at `below(len + 1)` with value
/// `live + k`; else delete the item at `below(len)`.
func genChurn(count: Int, live: Int = 1_000, seed: UInt64 = 12) -> [FlatOp] {
    var rng = SplitMix64(seed: seed)
    var len = live
    var ops: [FlatOp] = []
    ops.reserveCapacity(count)
    for k in 0..<count {
        if len == 0 || rng.below(2 * live) >= len {
            ops.append(FlatOp(insert: true, pos: rng.below(len + 1), value: live + k))
            len += 1
        } else {
            ops.append(FlatOp(insert: false, pos: rng.below(len), value: live + k))
            len -= 1
        }
    }
    return ops
}
