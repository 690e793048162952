/// A broken internal invariant: a bug in the engine, never the caller's fault.
public struct InvariantViolation: Error, CustomStringConvertible, Sendable {
    /// What is wrong, one line per problem.
    public var problems: [String]
    public var description: String { "invariants violated:\n" + problems.joined(separator: "\n") }
}

extension ListDocument {
    /// Checks every internal invariant; tests call it after each step.
    ///
    /// Checked: each tree's counts and links; every slot is in exactly one tree, the one of its
    /// sequence; each entity's position register holds its greatest slot; a slot shows exactly when
    /// it is its entity's winning slot and the entity is alive (items) or visible by §3.5
    /// (sections); so every visible identity appears exactly once; every live item is visible;
    /// no buffered operation is ready to apply.
    ///
    /// - Complexity: O(n log n) for n slots. Not for production paths.
    public func checkInvariants() throws(InvariantViolation) {
        var out: [String] = []
        if forest.trees.count != sections.count + 1 { out.append("\(forest.trees.count) trees for \(sections.count) sections") }
        out += forest.problems(Self.sectionTree).map { "section tree: \($0)" }
        for s in sections.indices {
            out += forest.problems(tree(ofSequence: .items(s))).map { "item tree \(s): \($0)" }
        }
        // Which tree each slot is in, and whether it shows.
        var where_: [SequenceIndex?] = Array(repeating: nil, count: slots.count)
        var shows: [Bool] = Array(repeating: false, count: slots.count)
        func collect(_ seq: SequenceIndex) {
            forest.forEachRun(tree(ofSequence: seq)) { lv, n, visible in
                for k in lv.int..<(lv.int + n) {
                    if where_[k] != nil { out.append("slot \(k) is in two trees") }
                    where_[k] = seq
                    shows[k] = visible
                }
            }
        }
        collect(.sections)
        for s in sections.indices { collect(.items(s)) }
        var greatestSection = Array(repeating: OpID.none, count: sections.count)
        var greatestItem = Array(repeating: OpID.none, count: items.count)
        for k in 0..<slots.count {
            let lv = LocalVersion(k)
            let seq = slots.sequence(of: lv)
            if where_[lv.int] != seq { out.append("slot \(lv) of sequence \(seq) is in \(where_[lv.int].map(\.description) ?? "no tree")") }
            let e = slots.entity(of: lv).int
            let id = writeID(ofSlot: lv)
            if !seq.isItems {
                greatestSection[e] = max(greatestSection[e], id)
                let shouldShow = sections.rows[e].winner == lv && isSectionVisible(EntityIndex(e))
                if shows[lv.int] != shouldShow { out.append("section slot \(lv) shows=\(shows[lv.int]), should be \(shouldShow)") }
            } else {
                greatestItem[e] = max(greatestItem[e], id)
                let shouldShow = items.rows[e].winner == lv && items.isAlive(EntityIndex(e))
                if shows[lv.int] != shouldShow { out.append("item slot \(lv) shows=\(shows[lv.int]), should be \(shouldShow)") }
                if items.rows[e].winner == lv && items.rows[e].section != seq.section { out.append("item \(e) is in section \(seq.section), register says \(items.rows[e].section)") }
            }
        }
        for s in 0..<sections.count where greatestSection[s] != sections.winnerID(EntityIndex(s)) || writeID(ofSlot: sections.rows[s].winner) != sections.winnerID(EntityIndex(s)) {
            out.append("section \(s): position register is \(sections.winnerID(EntityIndex(s))), greatest slot \(greatestSection[s])")
        }
        for i in 0..<items.count where greatestItem[i] != items.winnerID(EntityIndex(i)) || writeID(ofSlot: items.rows[i].winner) != items.winnerID(EntityIndex(i)) {
            out.append("item \(i): position register is \(items.winnerID(EntityIndex(i))), greatest slot \(greatestItem[i])")
        }
        for s in sections.indices where sectionShown[s.int] != isSectionVisible(s) {
            out.append("section \(s): cached visibility is stale")
        }
        // Every live item visible, in a visible section.
        for i in items.indices where items.isAlive(i) {
            if !isSectionVisible(items.rows[i.int].section) { out.append("live item \(i) is in a hidden section") }
        }
        // Unless parked on a cause the version counts and this copy never applied (SkippedCauses).
        for op in buffer.all where op.deps.allSatisfy({ versionVector.contains($0) }) && skippedCause(of: op) == nil {
            out.append("buffered \(op.id) has all its dependencies")
        }
        out += buffer.invariantProblems()
        if !out.isEmpty { throw InvariantViolation(problems: out) }
    }
}
