/// Which sequence a slot is in: the section sequence, or the item sequence of one section (named
/// by the section's dense index). One `Int32` (-1 for the sections), so typing it costs nothing
/// at `-O`; a section's index can no longer be passed where a sequence is meant, or the reverse.
struct SequenceIndex: Hashable, Sendable, CustomStringConvertible {
    /// -1 for the section sequence, else the section's dense index.
    let raw: Int32

    @inline(__always) private init(raw: Int32) { self.raw = raw }

    /// The sequence of the sections.
    static let sections = SequenceIndex(raw: -1)

    /// The item sequence of section `s`.
    @inline(__always) static func items(_ s: EntityIndex) -> SequenceIndex {
        precondition(s.exists, "no section \(s)")
        return SequenceIndex(raw: s.raw)
    }

    /// Whether this is an item sequence.
    @inline(__always) var isItems: Bool { raw >= 0 }

    /// The section whose items this sequence orders (an item sequence only).
    @inline(__always) var section: EntityIndex {
        precondition(raw >= 0, "the section sequence belongs to no section")
        return EntityIndex(raw)
    }

    /// The forest tree that orders this sequence: tree 0 for the sections, `s + 1` for the items
    /// of section `s`.
    @inline(__always) var tree: Int32 { raw + 1 }

    var description: String { raw < 0 ? "sections" : "items of section \(raw)" }
}
