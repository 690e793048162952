import ListCRDT

extension SemanticsOracle {
    /// The intents of field writes, checked on what `snapshot` shows, each as a person would
    /// state it rather than as the merge rule computes it (``expectedFields(of:)`` checks the
    /// rule itself):
    /// - no write to another field is lost: every field whose latest write (by stamp) is not a
    ///   removal is shown, of that write's kind, and a value field shows that write's value;
    /// - every increment counts: a counter never reset (no value set or removal of it) shows the
    ///   sum of every increment made to it;
    /// - every add counts where nothing removed: a set never reset nor removed from shows every
    ///   member ever added;
    /// - nothing appears that nobody wrote.
    ///
    /// Returns what fails, one line each; empty when every intent holds.
    ///
    /// - Complexity: O(w) for w field writes.
    public func checkFieldIntent(_ snapshot: ListSnapshot) -> [String] {
        var failures: [String] = []
        func check(_ shown: [String: Field], of entity: OpID, _ label: String) {
            let written = fieldWrites[entity] ?? [:]
            for name in shown.keys where written[name] == nil {
                failures.append("\(label) shows field \(name) that nobody wrote")
            }
            for (name, list) in written {
                let latest = list.max { ($0.clock, $0.id) < ($1.clock, $1.id) }!
                let field = shown[name]
                var onlyIncrements = true, onlyInserts = true
                var sum: Int64 = 0
                var members = Set<String>()
                for w in list {
                    if case .increment(let n) = w.write.change { sum &+= n } else { onlyIncrements = false }
                    if case .insert(let m) = w.write.change { members.formUnion(m) } else { onlyInserts = false }
                }
                switch (latest.write.change, field) {
                case (.remove, nil), (.splice, _), (.text, _): break
                case (.remove, let f?): failures.append("\(label).\(name) shows \(f) though its latest write removed it")
                case (_, nil): failures.append("\(label).\(name) is lost: its latest write \(latest.id) set it")
                case (.set(let v), let f?):
                    if f != .value(v.normalizedForOracle) { failures.append("\(label).\(name) shows \(f), its latest write \(latest.id) wrote \(v)") }
                case (.increment, let f?):
                    if case .counter = f {} else { failures.append("\(label).\(name) shows \(f), its latest write \(latest.id) is an increment") }
                    if onlyIncrements && f != .counter(sum) { failures.append("\(label).\(name) shows \(f), never reset, its \(list.count) increments sum to \(sum)") }
                case (.insert, let f?), (.delete, let f?):
                    if case .set = f {} else { failures.append("\(label).\(name) shows \(f), its latest write \(latest.id) changes a set") }
                    if onlyInserts && f != .set(members.sorted()) { failures.append("\(label).\(name) shows \(f), never removed from, its adds make \(members.sorted())") }
                }
            }
        }
        for section in snapshot.sections {
            check(section.fields, of: section.id.opID, "\(section.id)")
            for item in section.items { check(item.fields, of: item.id.opID, "\(item.id)") }
        }
        return failures
    }
}
