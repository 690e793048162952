import Foundation

/// The change a received batch made to a text field, as separate ranges a text view applies one by
/// one, so that its caret and selection move only where text changed before them (Docs/Text.md,
/// "From a text view"): read the field's text before and after the batch, and replace each range
/// of ``TextChanges/between(old:new:maxEdits:)`` in the view's storage.
public enum TextChanges {
    /// The least splices that turn `old` into `new` (Myers' diff over Unicode scalars), each
    /// positioned in `old`, in descending order of position: applied one after another (each with
    /// ``TextSplice/applied(to:)``), no earlier splice moves a later one's position. Empty when
    /// the texts are equal.
    ///
    /// Where more than `maxEdits` scalars differ, the middle between the common prefix and suffix
    /// is one splice (``TextSplice/between(old:new:)``): the bound keeps the cost linear.
    ///
    /// - Complexity: O((n + m) × d) for n and m scalars and d differences, d at most `maxEdits`.
    public static func between(old: String, new: String, maxEdits: Int = 1_000) -> [TextSplice] {
        let a = Array(old.unicodeScalars), b = Array(new.unicodeScalars)
        // The common prefix and suffix first: most changes are local.
        let (p, s) = TextSplice.commonEnds(a, b)
        let x = a[p ..< a.count - s], y = b[p ..< b.count - s]
        if x.isEmpty && y.isEmpty { return [] }
        guard let script = editScript(Array(x), Array(y), maxEdits: maxEdits) else {
            return [TextSplice(at: p, delete: x.count, insert: Self.string(y))]
        }
        // Runs of deletes and inserts between matches become one splice each.
        var out: [TextSplice] = []
        for run in script.reversed() {
            out.append(TextSplice(at: p + run.oldStart, delete: run.deleted, insert: Self.string(y[y.startIndex + run.newStart ..< y.startIndex + run.newStart + run.inserted])))
        }
        return out
    }

    /// Where a caret or selection end at `position` of the old text is after `splices` (from
    /// ``between(old:new:maxEdits:)``): moved by what changed before it; inside a replaced range,
    /// at the end of what replaced it; text inserted right at it comes after it.
    ///
    /// - Complexity: O(k) for k splices.
    public static func position(_ position: Int, through splices: [TextSplice]) -> Int {
        var p = position
        for sp in splices {
            let inserted = sp.insert.unicodeScalars.count
            if sp.at + sp.delete <= position, !(sp.delete == 0 && sp.at == position) {
                p += inserted - sp.delete                  // wholly before it
            } else if sp.at < position, position < sp.at + sp.delete {
                p += sp.at + inserted - position           // it was inside the replaced range
            }
        }
        return p
    }

    /// One run of the edit script: `deleted` scalars of the old text from `oldStart` replaced by
    /// `inserted` of the new from `newStart`.
    struct Run: Equatable { var oldStart: Int, deleted: Int, newStart: Int, inserted: Int }

    /// Myers' O(ND) shortest edit script between `a` and `b`, as runs, or nil past `maxEdits`.
    static func editScript(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar], maxEdits: Int) -> [Run]? {
        let n = a.count, m = b.count, limit = min(n + m, max(0, maxEdits))
        let offset = limit + 1
        var v = [Int](repeating: 0, count: 2 * limit + 3)
        var trace: [[Int]] = []
        var found = false
        outer: for d in 0 ... limit {
            trace.append(v)
            for k in stride(from: -d, through: d, by: 2) {
                var x: Int
                if k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]) {
                    x = v[offset + k + 1]          // down: an insert
                } else {
                    x = v[offset + k - 1] + 1      // right: a delete
                }
                var y = x - k
                while x < n, y < m, a[x] == b[y] { x += 1; y += 1 }
                v[offset + k] = x
                if x >= n && y >= m { found = true; break outer }
            }
        }
        guard found else { return nil }
        // Walk back through the saved frontiers: each step is one delete or insert.
        var edits: [(old: Int, new: Int, isDelete: Bool)] = []
        var x = n, y = m
        for d in stride(from: trace.count - 1, to: 0, by: -1) {
            let v = trace[d], k = x - y
            let down = k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1])
            let prevK = down ? k + 1 : k - 1
            let prevX = v[offset + prevK], prevY = prevX - prevK
            while x > prevX + (down ? 0 : 1), y > prevY + (down ? 1 : 0) { x -= 1; y -= 1 }   // the snake
            if down { edits.append((prevX, prevY, false)) } else { edits.append((prevX, prevY, true)) }
            (x, y) = (prevX, prevY)
        }
        // In order, merged into runs (a run continues while no match comes between).
        var runs: [Run] = []
        for e in edits.reversed() {
            if var last = runs.last, last.oldStart + last.deleted == e.old, last.newStart + last.inserted == e.new {
                if e.isDelete { last.deleted += 1 } else { last.inserted += 1 }
                runs[runs.count - 1] = last
            } else {
                runs.append(e.isDelete ? Run(oldStart: e.old, deleted: 1, newStart: e.new, inserted: 0)
                                       : Run(oldStart: e.old, deleted: 0, newStart: e.new, inserted: 1))
            }
        }
        return runs
    }

    private static func string<C: Collection>(_ scalars: C) -> String where C.Element == Unicode.Scalar {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }
}
