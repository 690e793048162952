/// What one replica is doing with a document right now, by identity: the ephemeral "presence"
/// that collaborators see (a drag in progress, a selection). It is never an operation: not
/// stored, not in the history, not acknowledged (Docs/DragSessions.md, "Presence").
///
/// Everything in it names items and sections by identity, so a receiver maps it to its *own*
/// index paths at the moment it reads it, whatever remote edits moved meanwhile.
public struct Presence: Hashable, Sendable {
    /// The replica that does it.
    public var replica: ReplicaID
    /// A name for people ("phone", "Ana's iPad"): at most ``maxNameBytes`` bytes of UTF-8.
    public var name: String
    /// What it does.
    public var activity: PresenceActivity

    /// The longest display name, in UTF-8 bytes.
    public static let maxNameBytes = 256
    /// The most items one presence names (a drag of a larger selection names its first ones).
    public static let maxItems = 256

    /// A presence; `name` is cut to ``maxNameBytes`` (at a character boundary) and the activity's
    /// items to ``maxItems``.
    public init(replica: ReplicaID, name: String, activity: PresenceActivity) {
        self.replica = replica
        self.name = Self.truncated(name)
        self.activity = activity.limited(to: Self.maxItems)
        assert(self.name.utf8.count <= Self.maxNameBytes && self.activity.items.count <= Self.maxItems)
    }

    /// `name` cut to at most ``maxNameBytes`` bytes without splitting a character.
    static func truncated(_ name: String) -> String {
        guard name.utf8.count > maxNameBytes else { return name }
        var out = ""
        for c in name {
            guard out.utf8.count + String(c).utf8.count <= maxNameBytes else { break }
            out.append(c)
        }
        return out
    }
}

/// What a replica's ``Presence`` says it does.
public enum PresenceActivity: Hashable, Sendable {
    /// Nothing in progress: a drag ended (dropped or cancelled), or an announcement that the
    /// replica is here. Receivers forget what it did before.
    case idle
    /// Dragging `items` (the primary first) that would land at `place` if dropped now.
    case dragging(items: [ItemID], to: PresencePlace)
    /// `items` are selected.
    case selecting(items: [ItemID])
    /// A caret or a selection in a text field (Docs/Text.md, "Carets").
    case editing(TextCaret)

    /// The items it names (none when idle; the item whose field is edited).
    public var items: [ItemID] {
        switch self {
        case .idle: return []
        case let .dragging(items, _), let .selecting(items): return items
        case .editing(let caret):
            if case .item(let i) = caret.target { return [i] }
            return []
        }
    }

    /// The same activity naming at most `n` items (a caret in a field whose name is not a
    /// field name becomes `idle`: it names nothing a receiver could show).
    func limited(to n: Int) -> PresenceActivity {
        switch self {
        case .idle: return self
        case .editing(let caret): return FieldLimits.problem(withName: caret.field) == nil ? self : .idle
        case let .dragging(items, place): return items.count <= n ? self : .dragging(items: Array(items.prefix(n)), to: place)
        case let .selecting(items): return items.count <= n ? self : .selecting(items: Array(items.prefix(n)))
        }
    }
}

/// Where dragged items would land, by identity: in `section`, between the row `after` (nil: the
/// top of the section) and the row `before` (nil: its end), neither of them a dragged item. A
/// ``DragSession`` anchors its placeholder to the same neighbours.
public struct PresencePlace: Hashable, Sendable {
    /// The section.
    public var section: SectionID
    /// The row right above the landing place; nil at the top of the section.
    public var after: ItemID?
    /// The row right below it; nil at the end of the section.
    public var before: ItemID?

    /// A landing place between `after` and `before` in `section`.
    public init(section: SectionID, after: ItemID?, before: ItemID?) {
        (self.section, self.after, self.before) = (section, after, before)
    }
}

/// Where a person's caret or selection is in one text field, by identity: its two ends are
/// ``TextAnchor``s, so a receiver finds them in its own copy of the text whatever was typed or
/// removed around them since (``ListDocument/position(of:_:ofItem:)``).
public struct TextCaret: Hashable, Sendable {
    /// The item or section whose field it is in.
    public var target: RecordTarget
    /// The text field.
    public var field: String
    /// Where the selection started (the fixed end).
    public var anchor: TextAnchor
    /// Where it ends (the end that moves); equal to `anchor` for a caret.
    public var head: TextAnchor

    /// A selection from `anchor` to `head` (a caret when they are equal) in field `field` of
    /// `target`.
    public init(target: RecordTarget, field: String, anchor: TextAnchor, head: TextAnchor) {
        (self.target, self.field, self.anchor, self.head) = (target, field, anchor, head)
    }

    /// A caret (an empty selection) at `at`.
    public init(target: RecordTarget, field: String, at: TextAnchor) {
        self.init(target: target, field: field, anchor: at, head: at)
    }
}
