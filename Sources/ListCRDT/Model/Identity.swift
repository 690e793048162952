/// The identity of one replica (a device, a process, a peer).
///
/// Replica ids are chosen by the caller, usually at random once per installation
/// (``random()``) and then kept. Two replicas must never share an id: ids break every tie between
/// concurrent operations. The raw value 0 is reserved: it is the replica of ``OpID/none``.
public struct ReplicaID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The raw 64-bit value.
    public var rawValue: UInt64

    /// Wraps a raw value.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// A random replica id drawn from `generator`, never the reserved 0.
    ///
    /// The engine stays pure: randomness comes only from the generator the caller passes, so a
    /// seeded generator gives the same ids on every run (for simulations and tests). Each id is one
    /// `next()` of the generator, redrawn while it is 0; the result does not depend on how the
    /// standard library maps random bits to ranges. 64 random bits make a clash unlikely: about
    /// n² / 2⁶⁵ for n replicas (3 × 10⁻⁸ for a million).
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> ReplicaID {
        var raw = generator.next()
        while raw == 0 { raw = generator.next() }
        return ReplicaID(raw)
    }

    /// A random replica id from the system's secure generator (`SystemRandomNumberGenerator`),
    /// never the reserved 0: what an app calls once per installation, then stores and reuses.
    public static func random() -> ReplicaID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    public static func < (a: ReplicaID, b: ReplicaID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "r\(rawValue)" }
}

/// The identity of one operation: a Lamport counter and the replica that made it.
///
/// Ids are totally ordered by `(counter, replica)`; that order decides every last-writer-wins
/// register and every tie between concurrent insertions. Counters start at 1; a counter of 0 means
/// "nothing" (see ``OpID/none``).
public struct OpID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The Lamport counter: greater than the counter of every operation the author had seen.
    public var counter: UInt64
    /// The replica that made the operation.
    public var replica: ReplicaID

    /// Makes an id from its parts.
    public init(counter: UInt64, replica: ReplicaID) {
        self.counter = counter
        self.replica = replica
    }

    /// The id smaller than every real id; stands for "no operation".
    public static let none = OpID(counter: 0, replica: ReplicaID(0))

    /// The largest counter an operation may use. Far below `UInt64.max`, so that an operation
    /// spanning several ids and the clock that follows it can never wrap.
    public static let maxCounter: UInt64 = 1 << 62

    /// The id `offset` counters after this one, by the same replica (the ids of a multi-slot
    /// operation are consecutive).
    @inlinable public func advanced(by offset: Int) -> OpID {
        OpID(counter: counter &+ UInt64(offset), replica: replica)
    }

    @inlinable public static func < (a: OpID, b: OpID) -> Bool {
        a.counter != b.counter ? a.counter < b.counter : a.replica.rawValue < b.replica.rawValue
    }

    public var description: String { "\(counter)@\(replica.rawValue)" }
}

/// The identity of an item: the id of the operation that inserted it. Never reused.
public struct ItemID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The id of the insert operation.
    public var opID: OpID
    /// Wraps an operation id.
    public init(_ opID: OpID) { self.opID = opID }
    public static func < (a: ItemID, b: ItemID) -> Bool { a.opID < b.opID }
    public var description: String { "item(\(opID))" }
}

/// The identity of a section: the id of the operation that inserted it. Never reused.
public struct SectionID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The id of the insert operation.
    public var opID: OpID
    /// Wraps an operation id.
    public init(_ opID: OpID) { self.opID = opID }
    public static func < (a: SectionID, b: SectionID) -> Bool { a.opID < b.opID }
    public var description: String { "section(\(opID))" }
}

/// The identity of a slot: a place in a sequence, made by an insert or a move.
///
/// An item or section is shown at the slot its position register points to. A slot's id is the id
/// of the operation that made it (plus an offset for the later slots of a multi-item move).
public struct SlotID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The id of the slot.
    public var opID: OpID
    /// Wraps an operation id.
    public init(_ opID: OpID) { self.opID = opID }
    public static func < (a: SlotID, b: SlotID) -> Bool { a.opID < b.opID }
    public var description: String { "slot(\(opID))" }
}
