import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An in-memory file system for the simulator: the second backend of ``FileSystem``
/// (``FileSystem/init(simulated:hook:)``), deterministic, that keeps apart what is durable and
/// what is only written, and loses the latter at a ``crash(using:)``.
///
/// What it keeps, and what a crash leaves (POSIX with no more promised than a sync gives; the
/// rules Docs/Storage.md's steps are written against):
/// - **File bytes** (and length) are durable as of the file's last `fdatasync` or `fsync`. A
///   crash puts every file back to those bytes, except that the last write made to a file since
///   its sync may leave a prefix of itself behind (a torn write: 0 up to all of its bytes, drawn
///   from the crash's generator). An unsynced `ftruncate` is undone.
/// - **Folder entries** (creations, renames, unlinks, `mkdir`, `rmdir`) are durable as of the
///   folder's last `fsync`; a crash puts every folder's entries back to those. Syncing a file does
///   not make its name durable, and a rename between two folders is durable in each only with
///   that folder's sync. A file that no durable entry names is gone.
/// - Every descriptor and lock dies with the crash; descriptor numbers are never reused, so a
///   descriptor of the process before the crash fails with `EBADF` instead of reaching a file.
/// - ``cutPower(afterMutatingCalls:)``: the crash strikes in the middle of a call sequence; the
///   k + 1-th mutating call and every call after it fail with `EIO` and change nothing.
///
/// Paths are absolute or relative to the root, `/`-separated; `.` components are ignored.
/// Not modelled: links, permissions other than the mode kept for ``FileSystem/permissions(_:)``,
/// space limits.
public final class SimulatedFileSystem: Sendable {
    struct Node {
        var isFolder: Bool
        var mode: UInt32
        /// The file's bytes as written.
        var data: [UInt8] = []
        /// The file's bytes as of its last sync.
        var durable: [UInt8] = []
        /// Whether `data` differs from `durable` (a write or truncation since the last sync).
        var dirty = false
        /// The last write since the last sync (a crash may keep a prefix of it).
        var lastWrite: (offset: Int, bytes: [UInt8])?
        /// The folder's entries, and those as of its last `fsync`.
        var entries: [String: Int] = [:]
        var durableEntries: [String: Int] = [:]
        var modified: UInt64 = 0
    }

    struct Open {
        var node: Int
        var readable: Bool
        var writable: Bool
    }

    struct State {
        var nodes: [Int: Node] = [0: Node(isFolder: true, mode: FileSystem.folderMode)]
        var nextNode = 1
        var open: [Int32: Open] = [:]
        var nextFD: Int32 = 3
        /// Exclusive locks: node → the descriptor holding it.
        var locks: [Int: Int32] = [:]
        /// Mutating calls left before the power goes (nil: no cut armed).
        var powerBudget: Int?
        var powerOff = false
        var clock: UInt64 = 0
        var ignoresFdatasync = false
        var stats = SimulatedFileSystemStats()
    }

    let state = Mutex(State())

    /// An empty file system: the root folder only.
    public init() {}

    /// A ``FileSystem`` whose calls go to this one.
    public var fileSystem: FileSystem { FileSystem(simulated: self) }

    /// The time files are marked modified at (ms since 1970); the simulator sets its virtual clock.
    public var clockMillis: UInt64 {
        get { state.withLock { $0.clock } }
        set { state.withLock { $0.clock = newValue } }
    }

    /// A broken disk, for tests of the simulator's power: `fdatasync` succeeds and makes nothing
    /// durable, which is what a log that acknowledged its appends without syncing them leaves
    /// behind (`fsync`, of files and folders, still works).
    public var ignoresFdatasync: Bool {
        get { state.withLock { $0.ignoresFdatasync } }
        set { state.withLock { $0.ignoresFdatasync = newValue } }
    }

    /// What has been done to the files so far.
    public var stats: SimulatedFileSystemStats { state.withLock { $0.stats } }

    /// Bytes written and not yet made durable, over every file (what a crash now loses, all but torn prefixes).
    ///
    /// - Complexity: O(f) for f files.
    public var unsyncedBytes: Int {
        state.withLock { s in s.nodes.values.reduce(0) { $0 + ($1.dirty ? ($1.lastWrite?.bytes.count ?? 0) : 0) } }
    }

    // MARK: Crashes

    /// Arms a power cut: `calls` more mutating calls run, and from the next one on every call fails
    /// with `EIO` and changes nothing, until ``crash(using:)``.
    public func cutPower(afterMutatingCalls calls: Int) {
        state.withLock { s in
            s.powerBudget = max(0, calls)
            if calls <= 0 { s.powerOff = true }
        }
    }

    /// The machine stops: every descriptor and lock is gone, every file is back to its durable
    /// bytes but for a prefix of its last unsynced write (its length drawn from `rng`), every
    /// folder back to its durable entries, and files no durable entry names are dropped.
    ///
    /// - Complexity: O(b) for b bytes of the files changed since their sync.
    public func crash<R: RandomNumberGenerator>(using rng: inout R) {
        state.withLock { s in
            s.open = [:]
            s.locks = [:]
            s.powerBudget = nil
            s.powerOff = false
            s.stats.crashes += 1
            for id in s.nodes.keys.sorted() {
                var n = s.nodes[id]!
                if n.isFolder {
                    n.entries = n.durableEntries
                } else if n.dirty {
                    var bytes = n.durable
                    if let w = n.lastWrite {
                        let keep = Int(rng.next() % UInt64(w.bytes.count + 1))
                        if keep > 0 {
                            if bytes.count < w.offset + keep { bytes += repeatElement(0, count: w.offset + keep - bytes.count) }
                            bytes.replaceSubrange(w.offset..<w.offset + keep, with: w.bytes[..<keep])
                            s.stats.tornBytesKept += keep
                        }
                    }
                    s.stats.bytesLost += Self.differing(n.data, bytes)
                    n.data = bytes
                    n.durable = bytes
                    n.dirty = false
                    n.lastWrite = nil
                }
                s.nodes[id] = n
            }
            // Only what the root reaches through durable entries is left.
            var reached: Set<Int> = [0]
            var stack = [0]
            while let id = stack.popLast() {
                for child in s.nodes[id]!.entries.values where reached.insert(child).inserted { stack.append(child) }
            }
            s.nodes = s.nodes.filter { reached.contains($0.key) }
        }
    }

    /// Bytes at which `a` and `b` differ, the longer one's extra bytes counted.
    ///
    /// - Complexity: O(n).
    static func differing(_ a: [UInt8], _ b: [UInt8]) -> Int {
        zip(a, b).reduce(abs(a.count - b.count)) { $0 + ($1.0 == $1.1 ? 0 : 1) }
    }

    // MARK: Paths

    static func components(_ path: String) -> [String] {
        path.split(separator: "/").map(String.init).filter { $0 != "." && !$0.isEmpty }
    }

    /// The node at `path`, or the errno of why not.
    static func lookup(_ path: String, in s: State) -> Result<Int, Errno> {
        var id = 0
        for name in components(path) {
            guard let n = s.nodes[id] else { return .failure(Errno(ENOENT)) }
            guard n.isFolder else { return .failure(Errno(ENOTDIR)) }
            guard let child = n.entries[name] else { return .failure(Errno(ENOENT)) }
            id = child
        }
        return .success(id)
    }

    /// The folder holding `path` and the last name, or the errno of why not.
    static func parent(_ path: String, in s: State) -> Result<(folder: Int, name: String), Errno> {
        var parts = components(path)
        guard let name = parts.popLast() else { return .failure(Errno(EBUSY)) }   // the root itself
        switch lookup(parts.joined(separator: "/"), in: s) {
        case let .failure(e): return .failure(e)
        case let .success(id):
            guard s.nodes[id]!.isFolder else { return .failure(Errno(ENOTDIR)) }
            return .success((id, name))
        }
    }

    struct Errno: Error { var code: Int32; init(_ c: Int32) { code = c } }

    /// Runs `body` on the state as one call: fails with `EIO` once the power is off; a mutating
    /// call spends the power budget.
    func call<T>(_ name: String, _ path: String?, mutating: Bool,
                 _ body: (inout State) throws(Errno) -> T) throws(StoreError) -> T {
        let result: Result<T, Errno> = state.withLock { s in
            if s.powerOff { return .failure(Errno(EIO)) }
            if mutating, let budget = s.powerBudget {
                if budget == 0 {
                    s.powerOff = true
                    return .failure(Errno(EIO))
                }
                s.powerBudget = budget - 1
            }
            do throws(Errno) { return .success(try body(&s)) } catch { return .failure(error) }
        }
        switch result {
        case let .success(v): return v
        case let .failure(e): throw .system(call: name, errno: e.code, path: path)
        }
    }

    static func file(_ fd: Int32, in s: State) throws(Errno) -> Open {
        guard let o = s.open[fd] else { throw Errno(EBADF) }
        return o
    }

    // MARK: Calls (as FileSystem's)

    func open(_ path: String, flags: Int32, mode: UInt32) throws(StoreError) -> Int32 {
        try call("open", path, mutating: flags & O_CREAT != 0) { (s: inout State) throws(Errno) -> Int32 in
            let access = flags & O_ACCMODE
            let writable = access == O_WRONLY || access == O_RDWR
            var id: Int
            switch Self.lookup(path, in: s) {
            case let .success(found):
                if flags & O_CREAT != 0, flags & O_EXCL != 0 { throw Errno(EEXIST) }
                id = found
            case let .failure(e):
                guard e.code == ENOENT, flags & O_CREAT != 0 else { throw e }
                let (folder, name): (Int, String)
                switch Self.parent(path, in: s) {
                case let .success(p): (folder, name) = p
                case let .failure(e): throw e
                }
                id = s.nextNode
                s.nextNode += 1
                s.nodes[id] = Node(isFolder: false, mode: mode, modified: s.clock)
                s.nodes[folder]!.entries[name] = id
            }
            let node = s.nodes[id]!
            if node.isFolder, writable { throw Errno(EISDIR) }
            if !node.isFolder, flags & O_DIRECTORY != 0 { throw Errno(ENOTDIR) }
            if flags & O_TRUNC != 0, writable, !node.data.isEmpty {
                s.nodes[id]!.data = []
                s.nodes[id]!.dirty = true
                s.nodes[id]!.lastWrite = nil
            }
            let fd = s.nextFD
            s.nextFD += 1
            s.open[fd] = Open(node: id, readable: access != O_WRONLY, writable: writable)
            return fd
        }
    }

    func close(_ fd: Int32, path: String?) throws(StoreError) {
        try call("close", path, mutating: false) { (s: inout State) throws(Errno) in
            guard let o = s.open.removeValue(forKey: fd) else { throw Errno(EBADF) }
            if s.locks[o.node] == fd { s.locks[o.node] = nil }
        }
    }

    func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, offset: Int64, path: String?) throws(StoreError) -> Int {
        try call("pread", path, mutating: false) { (s: inout State) throws(Errno) -> Int in
            let o = try Self.file(fd, in: s)
            guard o.readable else { throw Errno(EBADF) }
            let n = s.nodes[o.node]!
            if n.isFolder { throw Errno(EISDIR) }
            let start = Int(offset)
            guard start < n.data.count else { return 0 }
            let count = min(buffer.count, n.data.count - start)
            n.data.withUnsafeBytes { src in
                buffer.baseAddress!.copyMemory(from: src.baseAddress! + start, byteCount: count)
            }
            return count
        }
    }

    func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, offset: Int64, path: String?) throws(StoreError) {
        try call("pwrite", path, mutating: true) { (s: inout State) throws(Errno) in
            let o = try Self.file(fd, in: s)
            guard o.writable else { throw Errno(EBADF) }
            let start = Int(offset)
            let written = [UInt8](bytes)
            var n = s.nodes[o.node]!
            s.nodes[o.node] = nil   // keep `data` uniquely referenced while it changes
            if n.data.count < start + written.count { n.data += repeatElement(0, count: start + written.count - n.data.count) }
            n.data.replaceSubrange(start..<start + written.count, with: written)
            n.dirty = true
            n.lastWrite = (start, written)
            n.modified = s.clock
            s.nodes[o.node] = n
            s.stats.bytesWritten += written.count
            s.stats.writes += 1
        }
    }

    func sync(_ name: String, _ fd: Int32, path: String?) throws(StoreError) {
        try call(name, path, mutating: true) { (s: inout State) throws(Errno) in
            let o = try Self.file(fd, in: s)
            if name == "fdatasync", s.ignoresFdatasync { return }
            var n = s.nodes[o.node]!
            s.nodes[o.node] = nil
            if n.isFolder {
                let dropped = n.durableEntries.values.filter { !n.entries.values.contains($0) }
                n.durableEntries = n.entries
                s.stats.folderSyncs += 1
                s.nodes[o.node] = n
                if !dropped.isEmpty { Self.collect(&s) }
                return
            } else {
                if n.dirty { n.durable = n.data }
                n.dirty = false
                n.lastWrite = nil
                s.stats.fileSyncs += 1
            }
            s.nodes[o.node] = n
        }
    }

    /// Drops the nodes that neither an entry (as written or durable) nor a descriptor reaches.
    ///
    /// - Complexity: O(n) for n nodes.
    static func collect(_ s: inout State) {
        var reached: Set<Int> = [0]
        var stack = [0] + s.open.values.map(\.node)
        for id in stack { reached.insert(id) }
        while let id = stack.popLast() {
            guard let n = s.nodes[id] else { continue }
            for child in n.entries.values where reached.insert(child).inserted { stack.append(child) }
            for child in n.durableEntries.values where reached.insert(child).inserted { stack.append(child) }
        }
        s.nodes = s.nodes.filter { reached.contains($0.key) }
    }

    func ftruncate(_ fd: Int32, length: Int64, path: String?) throws(StoreError) {
        try call("ftruncate", path, mutating: true) { (s: inout State) throws(Errno) in
            let o = try Self.file(fd, in: s)
            guard o.writable else { throw Errno(EINVAL) }
            var n = s.nodes[o.node]!
            s.nodes[o.node] = nil
            let length = Int(length)
            if n.data.count > length { n.data.removeSubrange(length...) } else { n.data += repeatElement(0, count: length - n.data.count) }
            n.dirty = true
            n.lastWrite = nil
            n.modified = s.clock
            s.nodes[o.node] = n
        }
    }

    func size(_ fd: Int32, path: String?) throws(StoreError) -> Int64 {
        try call("fstat", path, mutating: false) { (s: inout State) throws(Errno) -> Int64 in
            Int64(s.nodes[try Self.file(fd, in: s).node]!.data.count)
        }
    }

    func node(at path: String, _ name: String) throws(StoreError) -> Node {
        try call(name, path, mutating: false) { (s: inout State) throws(Errno) -> Node in
            switch Self.lookup(path, in: s) {
            case let .success(id): return s.nodes[id]!
            case let .failure(e): throw e
            }
        }
    }

    func rename(_ from: String, to: String) throws(StoreError) {
        try call("rename", "\(from) -> \(to)", mutating: true) { (s: inout State) throws(Errno) in
            let (a, b): ((folder: Int, name: String), (folder: Int, name: String))
            switch (Self.parent(from, in: s), Self.parent(to, in: s)) {
            case let (.success(x), .success(y)): (a, b) = (x, y)
            case let (.failure(e), _), let (_, .failure(e)): throw e
            }
            guard let id = s.nodes[a.folder]!.entries[a.name] else { throw Errno(ENOENT) }
            if let existing = s.nodes[b.folder]!.entries[b.name], existing != id {
                let moving = s.nodes[id]!, there = s.nodes[existing]!
                if there.isFolder && !moving.isFolder { throw Errno(EISDIR) }
                if !there.isFolder && moving.isFolder { throw Errno(ENOTDIR) }
                if there.isFolder && !there.entries.isEmpty { throw Errno(ENOTEMPTY) }
            }
            s.nodes[a.folder]!.entries[a.name] = nil
            s.nodes[b.folder]!.entries[b.name] = id
        }
    }

    func remove(_ path: String, folder: Bool) throws(StoreError) {
        try call(folder ? "rmdir" : "unlink", path, mutating: true) { (s: inout State) throws(Errno) in
            let p: (folder: Int, name: String)
            switch Self.parent(path, in: s) {
            case let .success(x): p = x
            case let .failure(e): throw e
            }
            guard let id = s.nodes[p.folder]!.entries[p.name] else { throw Errno(ENOENT) }
            let n = s.nodes[id]!
            if folder {
                guard n.isFolder else { throw Errno(ENOTDIR) }
                guard n.entries.isEmpty else { throw Errno(ENOTEMPTY) }
            } else if n.isFolder {
                throw Errno(EISDIR)
            }
            // The node stays while a durable entry may still name it (a crash brings it back).
            s.nodes[p.folder]!.entries[p.name] = nil
        }
    }

    func mkdir(_ path: String, mode: UInt32) throws(StoreError) {
        try call("mkdir", path, mutating: true) { (s: inout State) throws(Errno) in
            if case .success = Self.lookup(path, in: s) { throw Errno(EEXIST) }
            let p: (folder: Int, name: String)
            switch Self.parent(path, in: s) {
            case let .success(x): p = x
            case let .failure(e): throw e
            }
            let id = s.nextNode
            s.nextNode += 1
            s.nodes[id] = Node(isFolder: true, mode: mode, modified: s.clock)
            s.nodes[p.folder]!.entries[p.name] = id
        }
    }

    func flock(_ fd: Int32, _ operation: Int32, path: String?) throws(StoreError) {
        try call("flock", path, mutating: false) { (s: inout State) throws(Errno) in
            let o = try Self.file(fd, in: s)
            if operation & LOCK_UN != 0 {
                if s.locks[o.node] == fd { s.locks[o.node] = nil }
                return
            }
            if let holder = s.locks[o.node], holder != fd { throw Errno(EWOULDBLOCK) }
            s.locks[o.node] = fd
        }
    }

    func list(_ path: String) throws(StoreError) -> [String] {
        let n = try node(at: path, "readdir")
        guard n.isFolder else { throw .system(call: "readdir", errno: ENOTDIR, path: path) }
        return n.entries.keys.sorted()
    }

    func exists(_ path: String) -> Bool {
        state.withLock { s in
            if case .success = Self.lookup(path, in: s) { return true }
            return false
        }
    }

    // MARK: Inspection (tests)

    /// The bytes of the file at `path` as written (nil: none there).
    public func contents(of path: String) -> [UInt8]? {
        state.withLock { s in
            guard case let .success(id) = Self.lookup(path, in: s), !s.nodes[id]!.isFolder else { return nil }
            return s.nodes[id]!.data
        }
    }
}

/// Counts of what a ``SimulatedFileSystem`` was asked to do.
public struct SimulatedFileSystemStats: Sendable, Equatable {
    /// `pwrite` calls, and the bytes they wrote.
    public var writes = 0, bytesWritten = 0
    /// `fdatasync`/`fsync` of files, and `fsync` of folders.
    public var fileSyncs = 0, folderSyncs = 0
    /// Crashes; bytes of files they changed back (written, not synced, now as before); bytes of
    /// torn writes they kept.
    public var crashes = 0, bytesLost = 0, tornBytesKept = 0

    public init() {}
}
