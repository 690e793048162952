import ListCRDT

/// The `presence` message's body (Docs/Protocol.md, "Presence"):
///
/// ```
/// presence := replica:varint (≠ 0) name:string (≤ 256 bytes) kind:u8 …
///   kind 0  idle
///   kind 1  dragging:  count:varint (1 … 256) item:id × count  section:id  after:id?  before:id?
///   kind 2  selecting: count:varint (0 … 256) item:id × count
///   kind 3  editing:   target:u8 (0 item, 1 section) id  field:string (a field name)
///                      anchor:caret-end  head:caret-end            (message version 5)
/// caret-end := side:u8 (0 after, 1 before) id?   (absent: the start for after, the end for before)
/// id  := replica:varint counter:varint      (the OpID of the item's or section's insert)
/// id? := 00 | 01 id
/// ```
enum PresenceKind: UInt8 {
    case idle = 0, dragging, selecting, editing
}

extension WireWriter {
    mutating func presence(_ p: Presence) {
        varint(p.replica.rawValue)
        string(p.name)
        switch p.activity {
        case .idle:
            byte(PresenceKind.idle.rawValue)
        case let .dragging(items, place):
            byte(PresenceKind.dragging.rawValue)
            opIDs(items.map(\.opID))
            opID(place.section.opID)
            optionalOpID(place.after?.opID)
            optionalOpID(place.before?.opID)
        case let .selecting(items):
            byte(PresenceKind.selecting.rawValue)
            opIDs(items.map(\.opID))
        case let .editing(caret):
            byte(PresenceKind.editing.rawValue)
            switch caret.target {
            case .item(let i): byte(0); opID(i.opID)
            case .section(let s): byte(1); opID(s.opID)
            }
            string(caret.field)
            caretEnd(caret.anchor)
            caretEnd(caret.head)
        }
    }

    mutating func caretEnd(_ a: TextAnchor) {
        byte(a.side.rawValue)
        optionalOpID(a.character == .none ? nil : a.character)
    }

    mutating func opID(_ id: OpID) { varint(id.replica.rawValue); varint(id.counter) }
    mutating func optionalOpID(_ id: OpID?) {
        if let id { byte(1); opID(id) } else { byte(0) }
    }
    mutating func opIDs(_ ids: [OpID]) {
        count(ids.count)
        for id in ids { opID(id) }
    }
}

extension WireReader {
    /// A presence, checked against its limits (a sender never writes more; a decoder refuses it).
    mutating func presence() throws(WireError) -> Presence {
        let at = offset
        let replica = ReplicaID(try varint())
        guard replica.rawValue != 0 else { throw .invalidValue("presence of replica 0", offset: at) }
        let name = try validString(limit: Presence.maxNameBytes)
        let kindAt = offset
        let activity: PresenceActivity
        let k = try byte()
        switch PresenceKind(rawValue: k) {
        case .idle?:
            activity = .idle
        case .dragging?:
            let items = try opIDs(min: 1).map(ItemID.init)
            let section = SectionID(try opID())
            activity = .dragging(items: items, to: PresencePlace(section: section, after: try optionalOpID().map(ItemID.init),
                                                                 before: try optionalOpID().map(ItemID.init)))
        case .selecting?:
            activity = .selecting(items: try opIDs(min: 0).map(ItemID.init))
        case .editing?:
            let targetAt = offset
            let target: RecordTarget
            switch try byte() {
            case 0: target = .item(ItemID(try opID()))
            case 1: target = .section(SectionID(try opID()))
            case let t: throw .invalidTag(t, offset: targetAt)
            }
            let fieldAt = offset
            let field = try validString(limit: FieldLimits.maxNameBytes)
            if let why = FieldLimits.problem(withName: field) { throw .invalidValue(why, offset: fieldAt) }
            activity = .editing(TextCaret(target: target, field: field, anchor: try caretEnd(), head: try caretEnd()))
        case nil:
            throw .invalidTag(k, offset: kindAt)
        }
        let p = Presence(replica: replica, name: name, activity: activity)
        assert(p.name == name && p.activity == activity, "a decoded presence within its limits is kept as it is")
        return p
    }

    mutating func caretEnd() throws(WireError) -> TextAnchor {
        let at = offset
        guard let side = TextAnchor.Side(rawValue: try byte()) else { throw .invalidValue("a caret end that is neither after nor before", offset: at) }
        return TextAnchor(character: try optionalOpID() ?? .none, side: side)
    }

    mutating func opID() throws(WireError) -> OpID {
        let replica = ReplicaID(try varint())
        return OpID(counter: try varint(), replica: replica)
    }
    mutating func optionalOpID() throws(WireError) -> OpID? {
        try flag() ? try opID() : nil
    }
    /// Between `min` and ``Presence/maxItems`` ids, each distinct.
    mutating func opIDs(min: Int) throws(WireError) -> [OpID] {
        let at = offset
        let n = try count(minBytes: 2)
        guard n >= min, n <= Presence.maxItems else {
            throw .invalidValue("\(n) items in a presence (\(min) to \(Presence.maxItems))", offset: at)
        }
        var ids: [OpID] = []
        ids.reserveCapacity(n)
        for _ in 0..<n { ids.append(try opID()) }
        guard Set(ids).count == n else { throw .invalidValue("an item twice in a presence", offset: at) }
        return ids
    }
}
