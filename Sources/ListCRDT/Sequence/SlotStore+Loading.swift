/// Slots written in place, for a loader that knows how many slots come and at most how many runs
/// (a state snapshot's decoder, Encoding/StateSnapshotDecoding.swift).
///
/// Appending to the store's arrays checked uniqueness and room for every slot run, and its
/// replica's id runs besides: a third of a snapshot load's instructions went to reading the slot
/// runs (the friendsforever trace). Here each run is written through a pointer into room made
/// once, and the id runs are derived from the runs at the end (``SlotStore/init(runs:slots:)``).
extension SlotStore {
    /// The writer ``SlotStore/load(slots:runs:_:)`` hands its body.
    struct Loading {
        private let slots: UnsafeMutablePointer<Slot>?
        private let slotCapacity: Int
        private let runs: UnsafeMutablePointer<Run>?
        private let runCapacity: Int
        /// Slots written.
        private(set) var count = 0
        /// Runs written.
        fileprivate(set) var runCount = 0

        fileprivate init(slots: UnsafeMutableBufferPointer<Slot>, runs: UnsafeMutableBufferPointer<Run>) {
            self.slots = slots.baseAddress
            slotCapacity = slots.count
            self.runs = runs.baseAddress
            runCapacity = runs.count
        }

        /// Adds `n` slots made together (ids `id`, `id + 1`, … for entities `e`, `e + 1`, …), as
        /// ``SlotStore/appendRun(id:count:left:right:sequence:entity:)`` does. Returns the first
        /// one's local version.
        ///
        /// - Complexity: O(n).
        @inline(__always)
        mutating func appendRun(id: OpID, count n: Int, left: LocalVersion, right: LocalVersion,
                                sequence: SequenceIndex, entity e: EntityIndex) -> LocalVersion {
            precondition(n >= 1 && n <= slotCapacity - count, "more slots than the loader was told of")
            let lv = LocalVersion(Int32(count))
            let run = run(for: id, count: n, at: lv, left: left, right: right, sequence: sequence)
            let base = slots! + count
            for k in 0 ..< n { (base + k).initialize(to: Slot(entity: e.advanced(by: Int32(truncatingIfNeeded: k)), run: run)) }
            count += n
            return lv
        }

        /// Adds one slot (as ``SlotStore/append(id:left:right:sequence:entity:)``).
        @inline(__always)
        mutating func append(id: OpID, left: LocalVersion, right: LocalVersion, sequence: SequenceIndex,
                             entity e: EntityIndex) -> LocalVersion {
            appendRun(id: id, count: 1, left: left, right: right, sequence: sequence, entity: e)
        }

        /// The sequence of slot `lv`, one of those written.
        @inline(__always)
        func sequence(of lv: LocalVersion) -> SequenceIndex {
            precondition(lv.raw >= 0 && lv.int < count, "slot \(lv) not written yet")
            return runs![Int(slots![lv.int].run)].sequence
        }

        /// The run the slots go in: the last one when they continue it, else a new one.
        @inline(__always)
        private mutating func run(for id: OpID, count n: Int, at lv: LocalVersion, left: LocalVersion,
                                  right: LocalVersion, sequence: SequenceIndex) -> Int32 {
            if runCount > 0, runs![runCount - 1].isContinued(by: id, at: lv, left: left, right: right, sequence: sequence) {
                runs![runCount - 1].count += Int32(n)
            } else {
                precondition(runCount < runCapacity, "more slot runs than the loader was told of")
                (runs! + runCount).initialize(to: Run(lv: lv, count: Int32(n), id: id, left: left, right: right, sequence: sequence))
                runCount += 1
            }
            return Int32(runCount - 1)
        }
    }

    /// A store of at most `n` slots in at most `r` runs, written by `body`: what it wrote when it
    /// returns, nothing when it throws (its error is rethrown).
    ///
    /// - Complexity: O(n + r) besides `body`.
    static func load<E: Error>(slots n: Int, runs r: Int, _ body: (inout Loading) throws(E) -> Void) throws(E) -> SlotStore {
        var failure: E?
        var runs: [Run] = []
        let slots = [Slot](unsafeUninitializedCapacity: n) { slotBuffer, slotsWritten in
            runs = [Run](unsafeUninitializedCapacity: r) { runBuffer, runsWritten in
                var loading = Loading(slots: slotBuffer, runs: runBuffer)
                do throws(E) { try body(&loading) } catch { failure = error }
                // Slots and runs are plain values: counting only what was written leaks nothing.
                slotsWritten = loading.count
                runsWritten = loading.runCount
            }
        }
        if let failure { throw failure }
        return SlotStore(runs: runs, slots: slots)
    }
}
