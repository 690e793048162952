import Foundation

/// Text runs of a state snapshot's log kept whole (version 8 and later, issue 45): the batch of
/// operations of other kinds ahead of the log is decoded with its text run records kept as
/// descriptors (``DecodedBatch/SpliceRun``), and a log record of n splices (tag 6) that takes
/// operations of one is checked against the field's text, and appended to the log, in one step,
/// where each keystroke was an operation built, checked, appended and released (most of a typed
/// text's state snapshot load). What is checked, and what the log holds, is what the same
/// operations one by one give; anything the one-step check does not take (a record not written
/// as state, a run whose characters are not one run of the text's slots) goes one by one, which
/// also names the first operation that is wrong.

/// The operations of the batch ahead of the log, taken in order by the log's records.
struct OtherOperationStream {
    enum Piece {
        /// `flat[start ..< start + count]`.
        case operations(start: Int, count: Int)
        /// ``DecodedBatch/textRuns``\[i\].
        case textRun(Int)
        /// ``DecodedBatch/lazyFields``\[r\].
        case lazy(Range<Int>)
    }

    private(set) var batch: DecodedBatch
    private var flat: [ListOperation] = []
    private var pieces: [Piece] = []
    /// The piece of the next operation, and its index in the piece.
    private var piece = 0
    private var offset = 0
    /// Operations taken, of ``count``.
    private(set) var taken = 0
    let count: Int

    /// The stream of `batch`'s operations (its insert and delete runs, which no valid snapshot
    /// has here, as operations).
    ///
    /// - Complexity: O(n) for n operations outside text runs.
    init(_ batch: DecodedBatch) {
        count = batch.operationCount
        var batch = batch
        var parts: [DecodedBatch.Part] = []
        swap(&parts, &batch.parts)
        for i in parts.indices {
            let start = flat.count
            // Moved out of the batch (a copy of its operations would retain each of their parts).
            var part = DecodedBatch.Part.textRun(0)
            swap(&part, &parts[i])
            switch part {
            case .operations(let ops):
                if flat.isEmpty { flat = ops } else { flat += ops }   // a document without text: one part, not copied
            case .insertRun(let r): for k in 0 ..< batch.insertRuns[r].count { flat.append(batch.operation(insertRun: r, k)) }
            case .deleteRun(let r): for k in 0 ..< batch.deleteRuns[r].count { flat.append(batch.operation(deleteRun: r, k)) }
            case .textRun(let r):
                pieces.append(.textRun(r))
                continue
            case .lazyFields(let r):
                pieces.append(.lazy(r))
                continue
            }
            pieces.append(.operations(start: start, count: flat.count - start))
        }
        self.batch = batch
    }

    /// An empty stream (version 5 and later, before the batch is read).
    init() { self.init(DecodedBatch()) }

    private func length(_ p: Piece) -> Int {
        switch p {
        case .operations(_, let n): n
        case .textRun(let r): batch.textRuns[r].count
        case .lazy(let r): r.count
        }
    }

    private mutating func advance(by n: Int) {
        taken += n
        offset += n
        while piece < pieces.count, offset >= length(pieces[piece]) {
            offset -= length(pieces[piece])
            piece += 1
        }
    }

    /// The next operation, moved out (or built, in a text run). The caller checked that one is left.
    mutating func next() -> ListOperation {
        precondition(taken < count, "no operation left")
        while offset >= length(pieces[piece]) { (piece, offset) = (piece + 1, 0) }   // empty pieces
        let op: ListOperation
        switch pieces[piece] {
        case .operations(let start, _): op = StateSnapshotDecoder.take(&flat[start + offset])
        case .textRun(let r): op = batch.operation(of: batch.textRuns[r], offset, in: batch.bytes)
        case .lazy(let r): op = batch.operation(lazy: r.lowerBound + offset)
        }
        advance(by: 1)
        return op
    }

    /// When the next operation is a field write kept as bytes: it (nothing is taken, ``skip(_:)``
    /// takes it).
    /// (Mutating, so that a call through the decoder's optional stream does not copy it.)
    @inline(__always)
    mutating func peekLazy() -> DecodedBatch.LazyField? {
        guard taken < count else { return nil }
        while offset >= length(pieces[piece]) { (piece, offset) = (piece + 1, 0) }   // empty pieces
        guard case .lazy(let r) = pieces[piece] else { return nil }
        return batch.lazyFields[r.lowerBound + offset]
    }

    /// When the next operation is one of a text run: the run, its index there, and how many of
    /// the run's operations from it are left, at most `max`. Nothing is taken (``skip(_:)`` takes them).
    func nextSplices(max: Int) -> (run: DecodedBatch.SpliceRun, from: Int, count: Int)? {
        guard taken < count, piece < pieces.count, case .textRun(let r) = pieces[piece] else { return nil }
        let run = batch.textRuns[r]
        return (run, offset, min(max, run.count - offset))
    }

    /// Takes `n` operations of the text run ``nextSplices(max:)`` gave.
    mutating func skip(_ n: Int) { advance(by: n) }
}

/// What a text run record of the log (tag 6) took from the batch ahead, in order.
enum LoggedSplices {
    /// One operation, taken one by one.
    case one(ListOperation)
    /// Operations `from ..< from + count` of a text run of the batch, checked in one step.
    case run(DecodedBatch.SpliceRun, from: Int, count: Int)
}

extension StateSnapshotDecoder {
    /// Takes the next `n` operations of the batch ahead for a text run record of replica index
    /// `k` (read at `at`): each a run-shaped splice, the next id of the one before, checked
    /// against its record as ``otherOperation(_:at:)`` checks it, whole pieces of a text run of
    /// the batch in one step where ``checkSplices(_:from:count:replica:at:)`` takes them.
    mutating func takeSplices(_ n: Int, replica k: Int, at: Int) throws(WireError) -> [LoggedSplices] {
        var out: [LoggedSplices] = []
        var previous = OpID.none
        var left = n
        while left > 0 {
            if let (run, from, count) = others!.nextSplices(max: left) {
                let firstID = run.id.advanced(by: from)
                if previous == .none || firstID == previous.advanced(by: 1),
                   try checkSplices(run, from: from, count: count, replica: k, at: at) {
                    others!.skip(count)
                    out.append(.run(run, from: from, count: count))
                    previous = run.id.advanced(by: from + count - 1)
                    left -= count
                    continue
                }
                // One by one (the error, if any, names the operation).
                for _ in 0 ..< count {
                    try takeOneSplice(replica: k, previous: &previous, at: at, into: &out)
                }
                left -= count
                continue
            }
            try takeOneSplice(replica: k, previous: &previous, at: at, into: &out)
            left -= 1
        }
        return out
    }

    private mutating func takeOneSplice(replica k: Int, previous: inout OpID, at: Int, into out: inout [LoggedSplices]) throws(WireError) {
        let op = try otherOperation(k, at: at)
        guard op.runTextEdit != nil, previous == .none || op.id == previous.advanced(by: 1) else {
            throw .invalidValue("an operation of a text run that is not its next splice", offset: at)
        }
        previous = op.id
        out.append(.one(op))
    }

    /// Checks operations `from ..< from + count` of `run` in one step, as ``otherOperation(_:at:)``
    /// and ``applyHistory(_:of:to:at:)`` check each (of replica index `k`; the field's limits,
    /// its record and text in the state, each edit against the text), and notes them as those
    /// do. False, with nothing changed, when one step cannot take them: a record not loaded as
    /// state, a typed run whose characters are not one slot run of the text with its origins,
    /// anything one of the operations would be refused for.
    ///
    /// - Complexity: O(n log N) for n operations in a text of N characters.
    private mutating func checkSplices(_ run: DecodedBatch.SpliceRun, from: Int, count: Int, replica k: Int,
                                       at offset: Int) throws(WireError) -> Bool {
        let batch = others!.batch
        let name = batch.textNames[Int(run.name)]
        guard run.id.replica == replicas[k], FieldLimits.problem(withName: name) == nil, textState != nil else { return false }
        let key = TextStateCheck.Key(record: run.target.opID, name: name)
        guard let i = textState!.index[key] else { return false }
        let ends = lastEnd, indexOf = replicaIndexOf
        let fits = textState!.fields[i].noteSplices(batch, run, from: from, count: count) { x, id in
            if x.replica == id.replica { return x.counter < id.counter }
            guard let k = indexOf[x.replica] else { return false }
            return x.counter < ends[k]
        }
        guard fits else { return false }
        textState!.last = (key, i)
        var clock = doc.records.clock
        for j in from ..< from + count { clock = max(clock, batch.clock(run, j)) }
        doc.records.clock = clock
        return true
    }

    /// Appends what a text run record took (``takeSplices(_:replica:at:)``) to the log, the first
    /// operation with `deps`, each later one depending on exactly the one before: what
    /// `OpLog.append(other:)` of each does.
    mutating func appendSplices(_ taken: [LoggedSplices], deps: Frontier) {
        var deps = deps
        for piece in taken {
            switch piece {
            case .one(var op):
                op.deps = deps
                deps = Frontier(only: op.id)
                doc.log.append(other: op)
            case let .run(run, from, count):
                let batch = others!.batch
                let firstID = run.id.advanced(by: from), last = run.id.advanced(by: from + count - 1)
                defer { deps = Frontier(only: last) }
                var first = batch.operation(of: run, from, in: batch.bytes)
                first.deps = deps
                doc.log.append(other: first)
                guard count > 1 else { continue }
                if batch.withSplices(of: run, from: from + 1, count: count - 1, { splices, bytes in
                    doc.log.extendTextRun(after: firstID, by: count - 1, payloadBytes: bytes, splices)
                }) { continue }
                for j in from + 1 ..< from + count { doc.log.append(other: batch.operation(of: run, j, in: batch.bytes)) }
            }
        }
    }
}

extension TextStateCheck.Field {
    /// The local versions of the origins of splice `from` of typing run `run` (its `after`, or
    /// the character splice `from - 1` typed; its `before`), each a character of the text typed
    /// before it (`earlier(x, id)`), or nil.
    ///
    /// - Complexity: O(log r) for r id runs.
    func origins(of run: DecodedBatch.SpliceRun, from: Int, earlier: (OpID, OpID) -> Bool) -> (LocalVersion, LocalVersion)? {
        let firstID = run.id.advanced(by: from)
        var right = LocalVersion.none
        if run.before != .none {
            guard let r = text.lv(of: run.before), earlier(run.before, firstID) else { return nil }
            right = r
        }
        var left = LocalVersion.none
        let after = from == 0 ? run.after : run.id.advanced(by: from - 1)
        if after != .none {
            guard let l = text.lv(of: after), earlier(after, firstID) else { return nil }
            left = l
        }
        return (left, right)
    }

    /// Whether splices `from ..< from + count` of `run` (of `batch`) fit the text as
    /// ``problem(with:id:earlier:)`` of each would find (`earlier(x, id)`: whether character `x`
    /// was typed by an operation before operation `id` in the log); when they do, notes them as
    /// it does. A typed run fits in one step only when its characters are one slot run of the
    /// text, the first with the run's origins (so each later one has the one before as its left
    /// origin and the same right one); false otherwise, with nothing changed.
    ///
    /// - Complexity: O(n log N) for n splices in a text of N characters.
    mutating func noteSplices(_ batch: DecodedBatch, _ run: DecodedBatch.SpliceRun, from: Int, count: Int,
                              earlier: (OpID, OpID) -> Bool) -> Bool {
        let firstID = run.id.advanced(by: from)
        if run.typing, derivedOrder != nil { return appendDerivedSplices(batch, run, from: from, count: count, earlier: earlier) }
        guard run.typing else {
            var slots: [LocalVersion] = []
            slots.reserveCapacity(count)
            for j in from ..< from + count {
                let c = run.removed(j)
                guard c != .none, c.counter < OpID.maxCounter, earlier(c, run.id.advanced(by: j)),
                      let lv = text.lv(of: c) else { return false }
                slots.append(lv)
            }
            for lv in slots { removed[lv.int] = true }
            edits += count
            return true
        }
        guard let (left, right) = origins(of: run, from: from, earlier: earlier) else { return false }
        // The characters: one slot run of consecutive ids, the first with the run's origins.
        guard let lv = text.lv(of: firstID) else { return false }
        let slotRun = text.slots.run(of: lv)
        let at = Int(lv.distance(from: slotRun.lv))
        guard at + count <= slotRun.count, slotRun.id.advanced(by: at) == firstID, slotRun.right == right,
              text.slots.origins(of: lv) == (left, right) else { return false }
        if right.exists {
            if left.exists, !text.forest.isBefore(left, right) { return false }
            // Each later splice's left origin, the character the one before typed, comes before
            // the right origin.
            guard text.forest.allBefore(lv, count: count - 1, right) else { return false }
        }
        // Its scalars.
        let bytes = batch.characterBytes(run, from: from, count: count)
        let typed = batch.bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[bytes]), as: UTF8.self) }
        guard text.scalars.matches(lv.int ..< lv.int + count, typed) else { return false }
        edits += count
        inserted += count
        return true
    }
}
