// The example of `Docs/SwiftUI.md`, compiled wherever SwiftUI exists (Apple platforms). It was
// written on Linux, where there is no SwiftUI, and never compiled against SwiftUI (only type-checked
// against a hand-written stand-in for the declarations it uses); it is internal, not API.
#if canImport(SwiftUI)
import SwiftUI
import ListCRDT

/// A board of columns of cards: reorder and delete cards with `onMove` and `onDelete`, add one at
/// the end of a column, see other replicas' edits as they arrive.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
struct ListModelExample: View {
    struct Column: Codable, Sendable { var title: String }
    struct Card: Codable, Sendable { var text: String }

    /// The model of the replica's `LiveDocument`: `ListModel(live)`.
    @State var model: ListModel<Column, Card>
    /// Hands the operations of each edit to the sync layer.
    var send: ([ListOperation]) -> Void
    /// The last refusal, shown under the list.
    @State private var problem: String?

    var body: some View {
        List {
            ForEach(model.sections) { column in
                Section(column.value.title) {
                    ForEach(column.items) { card in
                        Text(card.value.text)
                    }
                    .onMove { offsets, destination in
                        edit { () throws(ListModelError) in
                            try model.moveItems(fromOffsets: offsets, toOffset: destination, inSection: column.id)
                        }
                    }
                    .onDelete { offsets in
                        edit { () throws(ListModelError) in
                            try model.deleteItems(atOffsets: offsets, inSection: column.id)
                        }
                    }
                    Button("Add a card") {
                        edit { () throws(ListModelError) in
                            [try model.insertItem(Card(text: "New card"), at: column.items.count, inSection: column.id)]
                        }
                    }
                }
            }
        }
        .overlay(alignment: .bottom) {
            if let problem { Text(problem) }
        }
        .task { await model.followChanges() }   // other replicas' edits, until the view goes
    }

    /// Runs one edit of the model and sends its operations; a refusal changed nothing.
    func edit(_ body: () throws(ListModelError) -> [ListOperation]) {
        do {
            send(try body())
            problem = nil
        } catch {
            problem = error.description
        }
    }
}
#endif
