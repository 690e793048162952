import Foundation
@_spi(Algorithms) import ListCRDT

extension ChangeSet {
    /// Whether an item shows differently: its value, or any of its fields (a field edit alone is
    /// a change a view must redraw).
    static func contentDiffers(_ a: ListSnapshot.Item, _ b: ListSnapshot.Item) -> Bool {
        a.value != b.value || a.fields != b.fields
    }

    /// Notes in ``textChanges`` each text field of `target` that shows text before and after and
    /// whose text changed: the fewest splices from the old text to the new.
    ///
    /// - Complexity: O(n + d²) per changed field of n scalars, d edits (``TextChanges``).
    mutating func noteTextChanges(_ old: [String: Field], _ new: [String: Field], of target: RecordTarget) {
        for name in new.keys.sorted() {
            guard case .text(let after)? = new[name], case .text(let before)? = old[name], before != after else { continue }
            textChanges.append(TextFieldChange(target: target, field: name, splices: TextChanges.between(old: before, new: after)))
        }
    }

    /// The change set that turns a table showing `old` into one showing `new` (see ``ChangeSet``
    /// for the rules it keeps).
    ///
    /// Every change costs a full comparison of the two snapshots, whatever its size.
    ///
    /// - Complexity: O(n log n) for n sections and items in both snapshots (hashing, plus a
    ///   longest increasing subsequence for the sections and one per section).
    public init(from old: ListSnapshot, to new: ListSnapshot) {
        self.init()
        let oldSections = old.sections, newSections = new.sections
        var oldSectionIndex: [SectionID: Int] = [:]
        oldSectionIndex.reserveCapacity(oldSections.count)
        for (i, s) in oldSections.enumerated() { oldSectionIndex[s.id] = i }
        var newSectionIndex: [SectionID: Int] = [:]
        newSectionIndex.reserveCapacity(newSections.count)
        for (j, s) in newSections.enumerated() { newSectionIndex[s.id] = j }

        // Sections: deletes, inserts, and moves outside a longest run kept in order.
        var survivors: [(old: Int, new: Int)] = []
        for (i, s) in oldSections.enumerated() {
            if let j = newSectionIndex[s.id] { survivors.append((i, j)) } else { deletedSections.insert(i) }
        }
        for (j, s) in newSections.enumerated() where oldSectionIndex[s.id] == nil { insertedSections.insert(j) }
        let keptSections = longestIncreasingSubsequence(survivors.map(\.new))
        var sectionMoved = [Bool](repeating: false, count: oldSections.count)
        for (k, pair) in survivors.enumerated() where !keptSections[k] {
            movedSections.append(Move(from: pair.old, to: pair.new))
            sectionMoved[pair.old] = true
        }

        // Items. An item "survives" when both its old and its new section survive.
        var oldPath: [ItemID: (section: Int, row: Int)] = [:]
        oldPath.reserveCapacity(old.numberOfItems)
        for (i, s) in oldSections.enumerated() {
            for (row, item) in s.items.enumerated() { oldPath[item.id] = (i, row) }
        }
        var newSectionOfItem: [ItemID: Int] = [:]
        newSectionOfItem.reserveCapacity(new.numberOfItems)
        for (j, s) in newSections.enumerated() {
            for item in s.items { newSectionOfItem[item.id] = j }
        }
        var touched = Set<Int>()   // old indexes of surviving sections with row updates

        for (j, section) in newSections.enumerated() {
            guard let home = oldSectionIndex[section.id] else { continue }   // inserted section
            var stayers: [(oldRow: Int, newRow: Int)] = []
            for (r, item) in section.items.enumerated() {
                guard let (i, row) = oldPath[item.id], !deletedSections.contains(i) else {
                    insertedItems.append(IndexPath(item: r, section: j))
                    touched.insert(home)
                    continue
                }
                if i == home {
                    stayers.append((row, r))
                } else {
                    movedItems.append(Move(from: IndexPath(item: row, section: i), to: IndexPath(item: r, section: j)))
                    touched.insert(home)
                    touched.insert(i)
                    if Self.contentDiffers(oldSections[i].items[row], item) {
                        reconfiguredItems.append(IndexPath(item: r, section: j))
                        noteTextChanges(oldSections[i].items[row].fields, item.fields, of: .item(item.id))
                    }
                }
            }
            let kept = longestIncreasingSubsequence(stayers.map(\.oldRow))
            for (k, pair) in stayers.enumerated() {
                let changed = Self.contentDiffers(oldSections[home].items[pair.oldRow], section.items[pair.newRow])
                if changed {
                    noteTextChanges(oldSections[home].items[pair.oldRow].fields, section.items[pair.newRow].fields,
                                    of: .item(section.items[pair.newRow].id))
                }
                if kept[k] {
                    if changed {
                        reloadedItems.append(IndexPath(item: pair.oldRow, section: home))
                        touched.insert(home)
                    }
                } else {
                    movedItems.append(Move(from: IndexPath(item: pair.oldRow, section: home),
                                           to: IndexPath(item: pair.newRow, section: j)))
                    touched.insert(home)
                    if changed { reconfiguredItems.append(IndexPath(item: pair.newRow, section: j)) }
                }
            }
        }
        for (i, section) in oldSections.enumerated() where !deletedSections.contains(i) {
            for (row, item) in section.items.enumerated() {
                // Gone, or gone into an inserted section (which brings its rows with it).
                if let j = newSectionOfItem[item.id], oldSectionIndex[newSections[j].id] != nil { continue }
                deletedItems.append(IndexPath(item: row, section: i))
                touched.insert(i)
            }
        }

        // Section values and fields.
        for pair in survivors where oldSections[pair.old].value != newSections[pair.new].value
            || oldSections[pair.old].fields != newSections[pair.new].fields {
            noteTextChanges(oldSections[pair.old].fields, newSections[pair.new].fields, of: .section(newSections[pair.new].id))
            if sectionMoved[pair.old] || touched.contains(pair.old) {
                reconfiguredSections.insert(pair.new)
            } else {
                reloadedSections.insert(pair.old)
            }
        }

        deletedItems.sort()
        insertedItems.sort()
        reloadedItems.sort()
        reconfiguredItems.sort()
        movedItems.sort { $0.from < $1.from }
    }
}

/// Marks the members of one longest strictly increasing subsequence of `values`.
///
/// - Complexity: O(k log k) for k values.
func longestIncreasingSubsequence(_ values: [Int]) -> [Bool] {
    var keep = [Bool](repeating: false, count: values.count)
    guard !values.isEmpty else { return keep }
    var tails: [Int] = []                                  // index of the smallest tail per length
    var previous = [Int](repeating: -1, count: values.count)
    for (k, v) in values.enumerated() {
        let lo = tails.partitionPoint { values[$0] < v }   // the first tail whose value is not below v
        if lo > 0 { previous[k] = tails[lo - 1] }
        if lo == tails.count { tails.append(k) } else { tails[lo] = k }
    }
    var k = tails[tails.count - 1]
    while k >= 0 {
        keep[k] = true
        k = previous[k]
    }
    return keep
}
