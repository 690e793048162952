import Dispatch
import ListCRDT
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Settings of a ``SharedLog``.
public struct SharedLogOptions: Sendable {
    /// A segment is closed and the next one started once its records pass this many bytes
    /// (default 16 MiB). Checkpointing removes whole segments.
    public var segmentBytes = 16 << 20
    /// Zeros written ahead of the records, as ``StoreOptions/preallocation`` (default 1 MiB).
    public var preallocation = 1 << 20
    /// Where commit rounds that no appending caller leads run (default nil: a serial dispatch
    /// queue of the log's own). The simulator passes a ``ManualCommitExecutor``.
    public var executor: (any CommitExecutor)?

    /// The defaults.
    public init() {}
}

/// One write-ahead log for every document of a data folder (Docs/Storage.md, "The shared log").
///
/// Records of any document are appended in arrival order, each with its CRC32C and its document's
/// id; appends that arrive while a sync runs share the next `fdatasync` (group commit across
/// documents), and each append returns once its group is durable. The log is a run of segment files
/// (`wal/segment-<base>`); a document's snapshot records the log position it covers, and a segment is
/// deleted (checkpointed) once no document needs a record in it.
///
/// Opening scans every live segment once (checksums only) and keeps an index: each document's
/// records not yet in its snapshot, by position. Loading a document then reads its own records and
/// nothing else (``records(of:from:maxValueSize:)``).
public final class SharedLog: Sendable {
    /// The log's folder (`<root>/wal`).
    public let folder: String
    /// The settings it was opened with.
    public let options: SharedLogOptions
    /// What opening found and did.
    public let recoveryReport: SharedLogRecovery
    let fs: FileSystem
    let writer: LogWriter
    let box: Box

    /// The index and segment list, behind their lock (a class, so that the writer's rotation can
    /// hold it).
    final class Box: Sendable {
        let state: Mutex<State>
        init(_ state: State) { self.state = Mutex(state) }
    }

    /// A record of a document that its snapshot does not cover yet.
    struct Ref: Sendable {
        var position: LogPosition
        var length: Int
    }

    struct State {
        /// Live segments by base, oldest first; the last is the one appended to.
        var segments: [LogPosition]
        /// Each document's uncovered records, in log order (changed only by ``add(_:of:)``,
        /// ``cover(_:below:)`` and ``drop(_:)``, which keep ``uncoveredBytes`` in step).
        private(set) var index: [DocumentID: [Ref]]
        /// The bytes of each document's records in ``index``: a host asks after every append
        /// (its snapshot threshold), and summing the refs made each append O(records).
        private(set) var uncoveredBytes: [DocumentID: Int64]
        /// When each document's newest record was made durable (ms since 1970; for records found
        /// by the scan at open, their segment's modification time).
        var lastWrite: [DocumentID: UInt64]

        init(segments: [LogPosition], index: [DocumentID: [Ref]] = [:], lastWrite: [DocumentID: UInt64] = [:]) {
            self.segments = segments
            self.index = index
            self.uncoveredBytes = index.mapValues { refs in Int64(refs.reduce(0) { $0 + $1.length }) }
            self.lastWrite = lastWrite
        }

        /// Indexes a record of `document`, after every record it has in the index.
        mutating func add(_ ref: Ref, of document: DocumentID) {
            assert(index[document]?.last.map { $0.position < ref.position } ?? true, "a document's records in log order")
            index[document, default: []].append(ref)
            uncoveredBytes[document, default: 0] += Int64(ref.length)
        }

        /// Forgets the records of `id` before `position` (its snapshot covers them).
        mutating func cover(_ id: DocumentID, below position: LogPosition) {
            guard var refs = index[id] else { return }
            refs.removeAll { $0.position < position }
            index[id] = refs.isEmpty ? nil : refs
            uncoveredBytes[id] = refs.isEmpty ? nil : Int64(refs.reduce(0) { $0 + $1.length })
        }

        /// Forgets every record of `id`.
        mutating func drop(_ id: DocumentID) {
            index[id] = nil
            uncoveredBytes[id] = nil
        }
    }

    // MARK: Opening

    /// Opens (creating if needed) the shared log in `folder` and recovers it: leftovers of
    /// interrupted writes removed; every segment's header checked (a file that is not a segment of
    /// this log is refused, never changed); each segment scanned up to its first bad record, whose
    /// bytes on are copied to `segment-<base>.tail-<n>` before the segment is cut there.
    ///
    /// - Throws: ``StoreError``.
    /// - Complexity: O(b) for b bytes of live segments.
    public static func open(folder: String, options: SharedLogOptions = SharedLogOptions(),
                            fileSystem fs: FileSystem = .system) throws(StoreError) -> SharedLog {
        var report = SharedLogRecovery()
        if !fs.exists(folder) {
            try fs.mkdir(folder)
            try fs.syncFolder(Opener.parent(of: folder))
        }
        let names = try fs.list(folder)
        var changed = false
        for name in names where name.hasSuffix(".tmp") {
            try fs.unlink(folder + "/" + name)
            changed = true
        }
        var bases = names.compactMap(SharedLogFormat.base(ofSegment:)).sorted()
        var index: [DocumentID: [Ref]] = [:]
        var lastWrite: [DocumentID: UInt64] = [:]
        var end = Int64(SharedLogFormat.headerSize)
        var allocated = end
        for (i, base) in bases.enumerated() {
            let path = folder + "/" + SharedLogFormat.segmentName(base)
            let bytes = try fs.readFile(path)
            let scan = try SharedLogScan.scan(bytes, base: base, path: path)
            for e in scan.entries {
                if e.type == .documentRemoved {
                    index[e.document] = nil
                } else {
                    index[e.document, default: []].append(Ref(position: e.position, length: e.length))
                }
            }
            report.records += scan.entries.count
            report.bytesScanned += bytes.count
            if let (offset, damage) = scan.damage {
                let tails = names.filter { $0.hasPrefix(SharedLogFormat.segmentName(base) + ".tail-") }.count
                let tailPath = path + ".tail-\(tails + 1)"
                try fs.writeAtomically(Array(bytes[offset...]), to: tailPath, folder: folder)
                let fd = try fs.open(path, flags: O_RDWR)
                defer { try? fs.close(fd, path: path) }
                try fs.ftruncate(fd, length: Int64(offset), path: path)
                try fs.fsync(fd, path: path)
                report.bytesKeptAside += bytes.count - offset
                report.damage.append((tailPath, damage))
            }
            if !scan.entries.isEmpty, let modified = try? fs.modificationMillis(path) {
                for e in scan.entries { lastWrite[e.document] = modified }
            }
            if i == bases.count - 1 {
                end = Int64(scan.validLength)
                allocated = scan.damage == nil ? Int64(bytes.count) : end
            }
        }
        if bases.isEmpty {
            try fs.writeAtomically(SharedLogFormat.header(base: 0), to: folder + "/" + SharedLogFormat.segmentName(0), folder: folder)
            bases = [0]
            report.created = true
        } else if changed {
            try fs.syncFolder(folder)
        }
        report.segments = bases.count
        let active = bases.last!
        let path = folder + "/" + SharedLogFormat.segmentName(active)
        let fd = try fs.open(path, flags: O_RDWR)
        let output = LogWriter.Output(fd: fd, path: path, end: end, allocated: allocated, generation: active,
                                      epoch: 0, logged: [:])
        return SharedLog(folder: folder, options: options, report: report, fs: fs, output: output,
                         state: State(segments: bases, index: index, lastWrite: lastWrite))
    }

    private init(folder: String, options: SharedLogOptions, report: SharedLogRecovery, fs: FileSystem,
                 output: LogWriter.Output, state: State) {
        self.folder = folder
        self.options = options
        self.recoveryReport = report
        self.fs = fs
        let box = Box(state)
        self.box = box
        let segmentBytes = Int64(max(SharedLogFormat.headerSize + 1, options.segmentBytes))
        writer = LogWriter(fs: fs, output: output, label: "wal", preallocation: options.preallocation,
                           executor: options.executor) { o in
            guard o.end >= segmentBytes else { return }
            // A failure to start the next segment is not the round's: its records are durable; the
            // segment grows and the next round tries again.
            _ = try? SharedLog.startSegment(after: &o, folder: folder, fs: fs, box: box)
        }
    }

    /// Starts the segment after the one `o` appends to: created whole (header, tmp + fsync +
    /// rename + fsync folder), then appends switch to it and the old one is cut to its records.
    @discardableResult
    static func startSegment(after o: inout LogWriter.Output, folder: String, fs: FileSystem,
                             box: Box) throws(StoreError) -> LogPosition {
        let base = o.generation + UInt64(o.end)
        let path = folder + "/" + SharedLogFormat.segmentName(base)
        try fs.writeAtomically(SharedLogFormat.header(base: base), to: path, folder: folder)
        let fd = try fs.open(path, flags: O_RDWR)
        // The old segment's preallocated zeros are of no more use (best effort: a crash leaves
        // them, and they read as free space).
        if o.allocated > o.end { try? fs.ftruncate(o.fd, length: o.end, path: o.path) }
        try? fs.close(o.fd, path: o.path)
        o.fd = fd
        o.path = path
        o.end = Int64(SharedLogFormat.headerSize)
        o.allocated = o.end
        o.generation = base
        box.state.withLock { $0.segments.append(base) }
        return base
    }

    // MARK: Appending

    /// Appends whole records of `document` (``SharedLogFormat/records(for:document:)`` or
    /// ``SharedLogFormat/epochRecord(_:document:)``) and returns once they are durable, with the
    /// position of the first. The index has them before this returns.
    ///
    /// - Throws: ``StoreError``: after a failed write or sync every append fails
    ///   (``StoreError/failed(first:)``) until ``recover()``.
    /// - Complexity: one write and one sync shared with every append of the round.
    @discardableResult
    public func append(_ records: [UInt8], of document: DocumentID) async throws(StoreError) -> LogPosition {
        let result: Result<LogPosition, StoreError> = await withCheckedContinuation { continuation in
            append(records, of: document) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// ``append(_:of:)`` that returns at once: `done` is called with the position of the first
    /// record once they are durable (or with the round's failure), from the commit round, which
    /// the log's ``SharedLogOptions/executor`` runs unless an appending caller leads it. The
    /// async form is this one.
    ///
    /// - Complexity: one write and one sync shared with every append of the round.
    public func append(_ records: [UInt8], of document: DocumentID,
                       then done: @escaping @Sendable (Result<LogPosition, StoreError>) -> Void) {
        writer.commitPlaced(records, maxIDs: [:], placed: indexer(document, records)) { result in
            done(result.map { $0.generation + UInt64($0.offset) })
        }
    }

    /// The blocking form of ``append(_:of:)`` (for callers that may block their thread).
    @discardableResult
    public func appendBlocking(_ records: [UInt8], of document: DocumentID) throws(StoreError) -> LogPosition {
        let placement = try writer.commitPlacedBlocking(records, placed: indexer(document, records))
        return placement.generation + UInt64(placement.offset)
    }

    /// Puts the records in the index as soon as they are durable, inside the commit round (so a
    /// checkpoint never sees a durable record that the index lacks).
    private func indexer(_ document: DocumentID, _ records: [UInt8]) -> @Sendable (LogWriter.Placement) -> Void {
        let lengths = SharedLogFormat.recordLengths(records)
        let box = self.box
        return { placement in
            let now = FileSystem.nowMillis()
            box.state.withLock { s in
                s.lastWrite[document] = now
                var at = placement.generation + UInt64(placement.offset)
                for n in lengths {
                    s.add(Ref(position: at, length: n), of: document)
                    at += UInt64(n)
                }
            }
        }
    }

    // MARK: Reading

    /// The position the next record will have, at least (the end of the active segment's records).
    public var end: LogPosition {
        get throws(StoreError) { try writer.exclusive { $0.generation + UInt64($0.end) } }
    }

    /// Document `id`'s records from position `from` on, decoded, in log order: only its own
    /// records are read.
    ///
    /// - Throws: ``StoreError/corruptRecord(path:position:reason:)`` for a record that no longer
    ///   checks or decodes (damage after the log was opened).
    /// - Complexity: O(r) reads for r records, plus decoding them.
    public func records(of id: DocumentID, from: LogPosition = 0, maxValueSize: Int) throws(StoreError) -> [LogRecord] {
        let (refs, segments) = box.state.withLock { s in ((s.index[id] ?? []).filter { $0.position >= from }, s.segments) }
        var out: [LogRecord] = []
        out.reserveCapacity(refs.count)
        var open: (base: LogPosition, fd: Int32, path: String)?
        defer { if let open { try? fs.close(open.fd, path: open.path) } }
        for ref in refs {
            guard let base = segments.last(where: { (b: LogPosition) -> Bool in b <= ref.position }) else {
                throw .corruptRecord(path: folder, position: ref.position, reason: "no segment holds it")
            }
            if open?.base != base {
                if let o = open { try? fs.close(o.fd, path: o.path) }
                open = nil
                let path = folder + "/" + SharedLogFormat.segmentName(base)
                open = (base, try fs.open(path, flags: O_RDONLY), path)
            }
            let o = open!
            let bytes = try fs.read(o.fd, count: ref.length, at: Int64(ref.position - base), path: o.path)
            let got = bytes.count
            guard got == ref.length else {
                throw .corruptRecord(path: o.path, position: ref.position, reason: "\(got) of \(ref.length) bytes read")
            }
            switch SharedLogScan.decode(bytes[...], maxValueSize: maxValueSize) {
            case let .success((document, record)):
                guard document == id else {
                    throw .corruptRecord(path: o.path, position: ref.position, reason: "the record is document \(document)'s")
                }
                out.append(record)
            case let .failure(damage):
                throw .corruptRecord(path: o.path, position: ref.position, reason: damage.description)
            }
        }
        return out
    }

    /// Bytes of document `id`'s records that its snapshot does not cover.
    public func uncoveredBytes(of id: DocumentID) -> Int64 {
        box.state.withLock { $0.uncoveredBytes[id] ?? 0 }
    }

    /// When a record of document `id` was last made durable here (ms since 1970), if the log has
    /// written or found one since it was opened.
    public func lastWrite(of id: DocumentID) -> UInt64? {
        box.state.withLock { $0.lastWrite[id] }
    }

    /// Every document with records in the log that its snapshot does not cover.
    public var documents: [DocumentID] {
        box.state.withLock { s in s.index.compactMap { $0.value.isEmpty ? nil : $0.key } }
    }

    // MARK: Checkpointing

    /// Records that document `id`'s snapshot holds every record of it before `position`: the
    /// index forgets them, and segments no document needs any more are deleted.
    ///
    /// - Complexity: O(r + d) for r records of the document and d documents.
    public func covered(_ id: DocumentID, below position: LogPosition) throws(StoreError) {
        box.state.withLock { $0.cover(id, below: position) }
        try checkpoint()
    }

    /// Removes document `id` from the log: a durable removal record (so that reopening does not read
    /// its earlier records, even if a document of the same id comes back), then ``forget(_:)``.
    public func remove(_ id: DocumentID) throws(StoreError) {
        _ = try writer.commitPlacedBlocking(SharedLogFormat.removalRecord(document: id))
        try forget(id)
    }

    /// Forgets every record of document `id` (destroyed: its records are never read again).
    public func forget(_ id: DocumentID) throws(StoreError) {
        box.state.withLock { s in
            s.drop(id)
            s.lastWrite[id] = nil
        }
        try checkpoint()
    }

    /// Deletes the oldest segments that no document needs: those before the segment of the oldest
    /// uncovered record (never the active one). Returns how many were deleted.
    @discardableResult
    public func checkpoint() throws(StoreError) -> Int {
        let doomed: [LogPosition] = box.state.withLock { s in
            let oldest = s.index.values.compactMap { $0.first?.position }.min() ?? .max
            var doomed: [LogPosition] = []
            for (i, base) in s.segments.enumerated() where i + 1 < s.segments.count {
                let next = s.segments[i + 1]
                guard next <= oldest else { break }
                doomed.append(base)
            }
            return doomed
        }
        guard !doomed.isEmpty else { return 0 }
        // Oldest first, so that a crash leaves no gap: the live segments stay a run.
        for base in doomed { try fs.unlink(folder + "/" + SharedLogFormat.segmentName(base)) }
        try fs.syncFolder(folder)
        box.state.withLock { $0.segments.removeFirst(doomed.count) }
        return doomed.count
    }

    /// The documents whose uncovered records hold the oldest segment, when the log has more than
    /// `segments` segments: snapshotting them lets ``checkpoint()`` delete it.
    public func documentsHolding(moreThan segments: Int) -> [DocumentID] {
        box.state.withLock { s in
            guard s.segments.count > max(1, segments) else { return [] }
            let next = s.segments[1]
            return s.index.compactMap { id, refs in (refs.first.map { $0.position < next } ?? false) ? id : nil }
        }
    }

    /// Live segments, oldest first (their bases).
    public var segments: [LogPosition] { box.state.withLock { $0.segments } }

    /// Commit rounds (each one `fdatasync`) run so far.
    public var syncCount: Int {
        get throws(StoreError) { try writer.exclusive { $0.syncs } }
    }

    // MARK: Failure

    /// Whether a write or sync failed (every append fails until ``recover()``).
    public var hasFailed: Bool { writer.output.withLock { $0.failure != nil } }

    /// After a failed write or sync: cuts the active segment back to the end of its last durable
    /// record, so that nothing the failed round wrote is read, and lets appends go on from there.
    /// Does nothing when not failed.
    ///
    /// Safe after a failed `fdatasync` too: only the failed round's bytes were unsynced (every
    /// earlier round's sync succeeded), and they are cut off; later rounds write and sync anew.
    ///
    /// - Throws: ``StoreError`` when the segment cannot be cut (the log stays failed).
    public func recover() throws(StoreError) {
        try writer.output.withLock { (o: inout LogWriter.Output) throws(StoreError) in
            guard o.failure != nil, !o.closed else { return }
            try fs.ftruncate(o.fd, length: o.end, path: o.path)
            o.allocated = o.end
            o.failure = nil
        }
    }

    /// Closes the active segment; later appends fail with ``StoreError/closed``.
    public func close() throws(StoreError) {
        try writer.close()
    }
}

/// What opening the shared log found and did.
public struct SharedLogRecovery: Sendable, CustomStringConvertible {
    /// Whether the log was created by this open.
    public var created = false
    /// Live segments after opening.
    public var segments = 0
    /// Intact records found.
    public var records = 0
    /// Bytes read.
    public var bytesScanned = 0
    /// Bytes of damaged tails moved out of segments.
    public var bytesKeptAside = 0
    /// Where each damaged tail went and what was wrong at its start.
    public var damage: [(path: String, reason: LogDamage)] = []

    public init() {}

    public var description: String {
        var parts = ["\(segments) segments, \(records) records, \(bytesScanned) bytes scanned"]
        for (path, reason) in damage { parts.append("kept a damaged tail aside in \(path) (\(reason))") }
        return parts.joined(separator: ", ")
    }
}
