import ListCRDT

// Sections and items are `Identifiable` by their identities, stable for their whole life (across
// moves, and the same on every replica): `ForEach(model.sections)` and `ForEach(section.items)`
// animate inserts, deletes and moves by identity.

extension TypedSnapshot.SectionEntry: Identifiable {}

extension TypedSnapshot.ItemEntry: Identifiable {}
