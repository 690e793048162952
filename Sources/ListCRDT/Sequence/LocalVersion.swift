/// A slot's *local version* (`lv`): the number a replica gives each slot it learns of, 0, 1, 2, …
/// in arrival order, shared by all sequences. ``SlotStore``, the forest's `leafOf` and every tree's
/// entries are indexed by it; it never leaves the replica (the same slot has different local
/// versions on different replicas). One `Int32`, so typing it costs nothing at `-O` and a
/// ``SlotStore`` slot stays 12 bytes; a local version can no longer be passed where an entity
/// index, a tree or a count is meant, or the reverse. ``none`` (-1): no slot (an origin at an end
/// of the sequence).
struct LocalVersion: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The local version; -1 for ``none``.
    let raw: Int32

    @inline(__always) init(_ raw: Int32) { self.raw = raw }

    /// The slot at array index `i` (which fits an `Int32`: a document holds fewer slots).
    @inline(__always) init(_ i: Int) { raw = Int32(i) }

    /// No slot (-1): the left origin of a slot at the start of its sequence, the right origin of
    /// one at its end.
    @inline(__always) static var none: LocalVersion { LocalVersion(Int32(-1)) }

    /// Whether this names a slot (is not ``none``).
    @inline(__always) var exists: Bool { raw >= 0 }

    /// `raw` as an array index (into the arrays kept by slot).
    @inline(__always) var int: Int { Int(raw) }

    /// The slot `n` after this one (`n < 0`: before it); the slots of one run or entry are
    /// consecutive.
    @inline(__always) func advanced(by n: Int32) -> LocalVersion { LocalVersion(raw &+ n) }

    /// The slot `n` after this one (`n < 0`: before it).
    @inline(__always) func advanced(by n: Int) -> LocalVersion { LocalVersion(raw &+ Int32(truncatingIfNeeded: n)) }

    /// The number of slots from `other` to this one (`self - other`): an offset in a run or entry.
    @inline(__always) func distance(from other: LocalVersion) -> Int32 { raw &- other.raw }

    @inline(__always) static func == (a: LocalVersion, b: LocalVersion) -> Bool { a.raw == b.raw }
    @inline(__always) static func < (a: LocalVersion, b: LocalVersion) -> Bool { a.raw < b.raw }
    @inline(__always) func hash(into hasher: inout Hasher) { hasher.combine(raw) }
    @inline(__always) var description: String { raw.description }
}
