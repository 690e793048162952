import ListCRDT

@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
extension LiveDocument {
    /// Holds back the change sets of received operations: from now until
    /// ``publishHeldChanges()``, ``receive(_:)-(S)`` applies operations and returns an empty
    /// change set (its lost moves wait for the held one), nothing is sent to subscribers, and
    /// ``snapshot`` stays the one last published. A catch-up of many batches then costs one
    /// snapshot and one diff instead of one per batch (`Docs/ChangeSets.md`, "Catch-ups").
    ///
    /// A local edit made meanwhile publishes everything up to it (its change set is from the
    /// snapshot last published); the hold goes on. Without change sets this does nothing.
    ///
    /// - Complexity: O(1).
    public func holdChanges() {
        state.withLock { $0.holdsChanges = true }
    }

    /// Ends a hold (``holdChanges()``): diffs, once, the snapshot last published against the
    /// document now, keeps the new snapshot, sends the change set to every subscriber (unless it
    /// is empty) and returns it. A change that touches more rows than
    /// ``ChangeSet/reloadThreshold(rows:)`` allows is reported as one reload
    /// (``ChangeSet/reloadsData``) instead of row by row. Without a hold, or without change sets,
    /// it publishes nothing new and returns an empty change set.
    ///
    /// - Complexity: O(n log n) for n visible sections and items (one snapshot and one diff).
    @discardableResult
    public func publishHeldChanges() -> ChangeSet {
        state.withLock { state in
            guard state.holdsChanges else { return ChangeSet() }
            state.holdsChanges = false
            guard state.publishesChanges else { return ChangeSet() }
            return Self.publish(&state, lostMoves: [], reloadingLarge: true)
        }
    }

    /// Whether change sets are being held (``holdChanges()``).
    public var holdsChanges: Bool { state.withLock { $0.holdsChanges } }
}
