import Foundation
import ListCRDT

/// The decoded rows a ``ListModel`` shows, brought up to date from one document snapshot to the
/// next without decoding again what did not change.
///
/// It keeps the part of the last snapshot that decoded (``shown``) aligned entry by entry with
/// its decoded form (``typed``): a section whose bytes (value, item identities and item values)
/// are unchanged keeps its entry as it was (no new items array); in any other section, each item
/// whose bytes are unchanged keeps its decoded value, and only new or changed values are decoded.
/// A value that does not decode is left out (a section with its items) and listed in
/// ``failures``; it is tried again at the next update.
struct DecodedRows<Section: Codable & Sendable, Item: Codable & Sendable>: Sendable {
    /// The part of the last snapshot that decoded: `typed` without the values.
    private(set) var shown = ListSnapshot()
    /// What the model shows.
    private(set) var typed = TypedSnapshot<Section, Item>()
    /// The values of the last snapshot that did not decode, in document order.
    private(set) var failures: [TypedDocumentError] = []

    /// Brings the rows up to `raw`, decoding with `coder` only the values that are new or whose
    /// bytes changed. Returns whether ``typed`` changed.
    ///
    /// - Complexity: O(n) for n sections and items of `raw` (comparisons of bytes and look-ups by
    ///   identity; the index of the new ``TypedSnapshot``), plus one decode per new or changed
    ///   value.
    mutating func update(to raw: ListSnapshot, coder: any ValueCoder) -> Bool {
        var sections: [TypedSnapshot<Section, Item>.SectionEntry] = []
        var kept: [ListSnapshot.Section] = []
        var failures: [TypedDocumentError] = []
        sections.reserveCapacity(raw.sections.count)
        kept.reserveCapacity(raw.sections.count)
        var changed = false
        for section in raw.sections {
            let old = typed.index(of: section.id)
            if let old, shown.sections[old] == section {
                // Nothing in this section changed: the same entry, shared.
                changed = changed || old != sections.count
                sections.append(typed.sections[old])
                kept.append(section)
                continue
            }
            let value: Section
            if let old, shown.sections[old].value == section.value, shown.sections[old].fields == section.fields {
                value = typed.sections[old].value
            } else {
                do { value = try FieldRecordCoding.decode(Section.self, value: section.value, fields: section.fields, coder: coder) } catch {
                    failures.append(.undecodableSection(section.id, error))
                    continue
                }
            }
            var items: [TypedSnapshot<Section, Item>.ItemEntry] = []
            var keptItems: [ListSnapshot.Item] = []
            items.reserveCapacity(section.items.count)
            keptItems.reserveCapacity(section.items.count)
            for item in section.items {
                if let path = typed.indexPath(of: item.id), shown.sections[path[0]].items[path[1]] == item {
                    items.append(typed.sections[path[0]].items[path[1]])
                } else {
                    do { items.append(.init(id: item.id, value: try FieldRecordCoding.decode(Item.self, value: item.value, fields: item.fields, coder: coder))) } catch {
                        failures.append(.undecodableItem(item.id, error))
                        continue
                    }
                }
                keptItems.append(item)
            }
            var keptSection = section
            keptSection.items = keptItems
            // Unchanged when only values that still do not decode differ.
            changed = changed || old != sections.count || shown.sections[old!] != keptSection
            sections.append(.init(id: section.id, value: value, items: items))
            kept.append(keptSection)
        }
        changed = changed || sections.count != typed.sections.count
        assert(sections.count == kept.count && zip(sections, kept).allSatisfy { $0.id == $1.id && $0.items.count == $1.items.count })
        shown = ListSnapshot(sections: kept)
        self.failures = failures
        if changed { typed = TypedSnapshot(sections: sections) }
        return changed
    }
}
