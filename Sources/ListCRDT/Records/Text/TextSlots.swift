/// The ids and origins of a text field's characters by local version, kept as runs only.
///
/// A ``SlotStore`` (the list's slots) also keeps 8 bytes for every slot: the entity it places and
/// its run. A character places no entity, so a text finds a character's run by a search over its
/// runs instead: a paste of 2 KB costs one run record here, where it cost 16 KB of slots (two
/// thirds of a replica's memory for issue 45's W17.notes board). The run of the last character
/// typed is found without a search.
struct TextSlots: Sendable {
    typealias Run = SlotStore.Run

    /// Runs in local-version order, covering `0 ..< count`.
    private(set) var runs: [Run] = []
    /// Number of characters.
    private(set) var count = 0
    /// Each replica's runs of ids to local versions.
    private var ids = IDRunIndex()

    /// No characters.
    init() {}

    /// The characters of `runs`, in local-version order from 0, as they are (a text's load, which
    /// checked them): the id runs appending them would have made.
    ///
    /// - Complexity: O(runs).
    init(runs: [Run]) {
        self.runs = runs
        for run in runs {
            assert(run.lv == LocalVersion(Int32(count)), "text runs out of order")
            ids.note(run.id, count: Int(run.count), at: run.lv)
            count += Int(run.count)
        }
    }

    /// Adds `n` characters made together (ids `id`, `id + 1`, …): the first with left origin
    /// `left`, each later one right after the one before, all with right origin `right`. They
    /// extend the last run when they continue it. Returns the first one's local version.
    ///
    /// - Complexity: O(1) amortized.
    @inline(__always)
    mutating func appendRun(id: OpID, count n: Int, left: LocalVersion, right: LocalVersion) -> LocalVersion {
        let lv = LocalVersion(Int32(count))
        if let last = runs.last, last.isContinued(by: id, at: lv, left: left, right: right, sequence: .sections) {
            runs[runs.count - 1].count += Int32(n)
        } else {
            runs.append(Run(lv: lv, count: Int32(n), id: id, left: left, right: right, sequence: .sections))
        }
        ids.note(id, count: n, at: lv)
        count += n
        return lv
    }

    /// The local version of the character with this id, or nil if unknown.
    ///
    /// - Complexity: O(log r) for r id runs of the replica.
    @inline(__always) func lv(of id: OpID) -> LocalVersion? { ids.lv(of: id) }

    /// ``lv(of:)`` with a guess of where to look (``IDRunIndex/lv(of:hint:)``).
    @inline(__always) func lv(of id: OpID, hint: inout IDRunIndex.Hint) -> LocalVersion? { ids.lv(of: id, hint: &hint) }

    /// The index in ``runs`` of the run holding character `lv` (`0 ..< count`).
    ///
    /// - Complexity: O(1) for the last run, else O(log r) for r runs.
    @inline(__always)
    func runIndex(of lv: LocalVersion) -> Int {
        precondition(lv.raw >= 0 && lv.int < count, "character \(lv) of \(count)")
        let last = runs.count - 1
        if runs[last].lv.raw <= lv.raw { return last }
        return runs.partitionPoint { $0.lv.raw <= lv.raw } - 1
    }

    /// The run holding character `lv`.
    @inline(__always) func run(of lv: LocalVersion) -> Run { runs[runIndex(of: lv)] }

    /// The id of character `lv`.
    ///
    /// - Complexity: as ``runIndex(of:)``.
    @inline(__always)
    func id(of lv: LocalVersion) -> OpID {
        run(of: lv).id(of: lv)
    }

    /// ``id(of:)``, looking first in run `hint` (an index into ``runs``: any value, it is checked)
    /// and leaving there the index of the run that holds `lv`: a held backspace removes the
    /// characters of one run one after the other, so the next removal's run is this one's.
    ///
    /// - Complexity: O(1) when run `hint` holds `lv`, else as ``runIndex(of:)``.
    @inline(__always)
    func id(of lv: LocalVersion, hint: inout Int32) -> OpID {
        if hint >= 0, Int(hint) < runs.count {
            let run = runs[Int(hint)]
            if run.lv.raw <= lv.raw, lv.raw &- run.lv.raw < run.count { return run.id(of: lv) }
        }
        let i = runIndex(of: lv)
        hint = Int32(truncatingIfNeeded: i)
        return runs[i].id(of: lv)
    }

    /// Left and right origins of character `lv` (``LocalVersion/none`` for the ends of the text).
    ///
    /// - Complexity: as ``runIndex(of:)``.
    func origins(of lv: LocalVersion) -> (left: LocalVersion, right: LocalVersion) {
        run(of: lv).origins(of: lv)
    }

    /// Heap bytes held, roughly.
    var heapBytes: Int {
        runs.capacity * MemoryLayout<Run>.stride
            + ids.runs.reduce(ids.runs.capacity * 8) { $0 + $1.capacity * MemoryLayout<IDRunIndex.Run>.stride }
    }
}

/// What ``SlotForest/placement(_:id:left:right:slots:tieBreak:)`` reads of the slots it scans:
/// the list's ``SlotStore`` and a text's ``TextSlots``.
protocol SlotOrigins {
    /// The id of slot `lv`.
    func id(of lv: LocalVersion) -> OpID
    /// Left and right origins of slot `lv`.
    func origins(of lv: LocalVersion) -> (left: LocalVersion, right: LocalVersion)
}

extension SlotStore: SlotOrigins {}
extension TextSlots: SlotOrigins {}
