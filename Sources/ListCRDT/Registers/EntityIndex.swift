/// The dense index of a section or an item (an *entity index*): its row in the ``EntityTable`` of
/// its level, in order of arrival. One `Int32`, so typing it costs nothing at `-O` and a
/// ``SlotStore`` slot stays 12 bytes; an entity index can no longer be passed where a local
/// version, a tree or a count is meant, or the reverse. ``none`` (-1): no entity.
struct EntityIndex: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The index; -1 for ``none``.
    let raw: Int32

    @inline(__always) init(_ raw: Int32) { self.raw = raw }

    /// The entity at array index `i` (which fits an `Int32`: tables hold fewer entities).
    @inline(__always) init(_ i: Int) { raw = Int32(i) }

    /// No entity (-1): a section row's `section`, the section a move left when it left none.
    @inline(__always) static var none: EntityIndex { EntityIndex(Int32(-1)) }

    /// Whether this names an entity (is not ``none``).
    @inline(__always) var exists: Bool { raw >= 0 }

    /// `raw` as an array index (into the arrays kept by entity).
    @inline(__always) var int: Int { Int(raw) }

    /// The entity `n` after this one (the entities of one run are consecutive).
    @inline(__always) func advanced(by n: Int32) -> EntityIndex { EntityIndex(raw &+ n) }

    @inline(__always) static func == (a: EntityIndex, b: EntityIndex) -> Bool { a.raw == b.raw }
    @inline(__always) static func < (a: EntityIndex, b: EntityIndex) -> Bool { a.raw < b.raw }
    @inline(__always) func hash(into hasher: inout Hasher) { hasher.combine(raw) }
    @inline(__always) var description: String { raw.description }
}
