import ListCRDT

extension ChangeSet {
    /// A change set that reloads the whole table (``reloadsData``).
    public static var reload: ChangeSet {
        var c = ChangeSet()
        c.reloadsData = true
        return c
    }

    /// The most row changes a catch-up reports one by one for a table of `rows` rows (the larger
    /// of the old and the new count): 1,000, or half the rows when that is fewer, but never
    /// under 100. A catch-up over it is reported as one reload: a table animates a few hundred
    /// row changes well, and redraws faster than it animates thousands (`Docs/ChangeSets.md`).
    ///
    /// - Complexity: O(1).
    public static func reloadThreshold(rows: Int) -> Int {
        max(100, min(1_000, rows / 2))
    }

    /// The rows this change set touches between `old` and `new`: rows deleted, inserted, moved
    /// or changed, and the rows of deleted and inserted sections.
    ///
    /// - Complexity: O(s) for s sections deleted or inserted.
    public func touchedRows(from old: ListSnapshot, to new: ListSnapshot) -> Int {
        var n = deletedItems.count + insertedItems.count + movedItems.count + reloadedItems.count + reconfiguredItems.count
        for s in deletedSections where s < old.sections.count { n += old.sections[s].items.count }
        for s in insertedSections where s < new.sections.count { n += new.sections[s].items.count }
        for s in reloadedSections where s < old.sections.count { n += old.sections[s].items.count }
        return n
    }

    /// Whether any change set from `old` to `new` touches more rows than
    /// ``reloadThreshold(rows:)`` allows, known from the row counts alone: at least the
    /// difference of the counts is inserted or deleted (a first open of a large list: every row).
    ///
    /// - Complexity: O(s) for s sections in both.
    static func mustReload(from old: ListSnapshot, to new: ListSnapshot) -> Bool {
        let a = old.numberOfItems, b = new.numberOfItems
        return abs(a - b) > reloadThreshold(rows: max(a, b))
    }

    /// This change set, or ``reload`` (with the same ``lostMoves``) when it touches more rows
    /// than ``reloadThreshold(rows:)`` allows.
    ///
    /// - Complexity: O(s) for s sections deleted or inserted.
    func asReloadIfLarge(from old: ListSnapshot, to new: ListSnapshot) -> ChangeSet {
        let rows = max(old.numberOfItems, new.numberOfItems)
        guard touchedRows(from: old, to: new) > Self.reloadThreshold(rows: rows) else { return self }
        var r = ChangeSet.reload
        r.lostMoves = lostMoves
        return r
    }
}
