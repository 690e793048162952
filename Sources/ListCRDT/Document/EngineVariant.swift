/// Deliberately broken variants of the engine (SPI for tests only): each breaks one rule, so that
/// the simulator's power to catch bugs can be measured (`Tests/ListSyncTests/TestPowerTests.swift`).
@_spi(Testing) public enum EngineVariant: Sendable, Hashable, CaseIterable {
    /// The real engine.
    case correct
    /// A move is a delete plus an insert of a new item with the same value (no position register):
    /// two concurrent moves of one item duplicate it.
    case moveAsDeleteAndInsert
    /// Operations whose dependencies are missing are not buffered: applied if their references
    /// happen to resolve, else dropped.
    case noCausalBuffer
    /// Concurrent insertions with the same origins are not ordered by id: the one that arrives
    /// last goes first, so replicas disagree.
    case noTieBreak
    /// Local operations choose their origins as builds before Fugue's origins did (left: the slot
    /// right before the insertion point, hidden or not; right: the visible slot at it). Replicas
    /// converge, but text typed in place of a deleted item can land after what another replica
    /// concurrently put after that item (`Docs/Semantics.md`, the `abcd` case). Also what tests use
    /// to make operations of older builds.
    case legacyOrigins
    /// A text edit made again (compaction's remake) keeps the right origin it was first made
    /// with, instead of the character that follows its left origin where it is made again: a
    /// replica that compacted and one that did not place it differently (Docs/Semantics.md §7,
    /// "Edits made again are made here").
    case keepsRemadeTextOrigins
    /// An operation woken from the causal buffer whose dependency of another author is counted
    /// by the version but was never applied here (its author skipped it: it re-synced and made its
    /// edits again under later counters) is dropped, as before the rule that keeps it waiting
    /// (Docs/Semantics.md §3.8): an acknowledged edit on a parted original is lost.
    case dropsWokenOnSkippedCause
    /// A compaction that keeps concurrent operations (``ListDocument/compact(stable:keepingConcurrent:)``)
    /// admits them but keeps nothing they name or scan: collected slots, values and records they
    /// need are gone when they are received again (Docs/Semantics.md §7, "Compacting under a chain
    /// of concurrent edits").
    case keepsNothingForConcurrent
    /// A floor that admits concurrent operations takes an operation for after it as soon as it
    /// depends on an admitted one, as the first build of that rule did, though the admitted one
    /// is not after the floor (Docs/Semantics.md §7, "Compacting under a chain of concurrent
    /// edits").
    case takesDependentsOfAdmitted
}
