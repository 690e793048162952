import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one door through which the store touches files: every call retries `EINTR`, throws
/// ``StoreError/system(call:errno:path:)`` with the call's name, errno and path, and first passes a
/// ``Call`` to an optional hook (modelled on swift-nio's `NIOPosix/System.swift`).
///
/// The hook is for tests: it sees every call in order (to count `fdatasync`s, say) and can make a
/// call fail with an errno instead of running it (`ENOSPC`, `EIO`, or every mutating call after the
/// k-th, which is what a crash looks like to the files).
///
/// ```swift
/// let calls = Mutex<[String]>([])
/// let fs = FileSystem { call in calls.withLock { $0.append(call.name) }; return nil }
/// ```
public struct FileSystem: Sendable {
    /// One file call about to be made.
    public struct Call: Sendable, CustomStringConvertible {
        /// The C function's name: `open`, `pread`, `pwrite`, `fdatasync`, `fsync`, `ftruncate`,
        /// `rename`, `unlink`, `rmdir`, `mkdir`, `fstat`, `flock`, `close`, `readdir`.
        public var name: String
        /// The file or folder it is about.
        public var path: String?
        /// Whether it can change what is on disk (`open` with `O_CREAT`, writes, syncs, truncations,
        /// renames, unlinks, `mkdir`).
        public var isMutating: Bool

        public var description: String { "\(name)(\(path ?? "-"))" }
    }

    /// Sees each call before it runs; returns nil to run it, or an errno to fail it with.
    public typealias Hook = @Sendable (Call) -> Int32?

    /// The hook, if any.
    public var hook: Hook?

    /// The simulated file system the calls go to instead of the real one, if any.
    public let simulated: SimulatedFileSystem?

    /// The real file system, with no hook.
    public static let system = FileSystem()

    /// A file system whose calls pass through `hook` first.
    public init(hook: Hook? = nil) {
        self.hook = hook
        simulated = nil
    }

    /// The in-memory `simulated` file system (the simulator's: durable and unsynced bytes kept
    /// apart, lost at its crash), its calls passing through `hook` first.
    public init(simulated: SimulatedFileSystem, hook: Hook? = nil) {
        self.hook = hook
        self.simulated = simulated
    }

    // MARK: The funnel

    /// Runs `body` (a C call returning -1 and setting errno on failure) after the hook, retrying
    /// `EINTR`.
    @inline(__always)
    func run<T: BinaryInteger>(_ name: String, _ path: String?, mutating: Bool,
                               _ body: () -> T) throws(StoreError) -> T {
        if let hook, let code = hook(Call(name: name, path: path, isMutating: mutating)) {
            throw .system(call: name, errno: code, path: path)
        }
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code == EINTR { continue }
            throw .system(call: name, errno: code, path: path)
        }
    }

    /// Asks the hook about a call that goes to the simulated file system.
    @inline(__always)
    func hooked(_ name: String, _ path: String?, mutating: Bool) throws(StoreError) {
        if let hook, let code = hook(Call(name: name, path: path, isMutating: mutating)) {
            throw .system(call: name, errno: code, path: path)
        }
    }

    // MARK: Calls

    /// The mode of every file the funnel creates: the owner reads and writes, nobody else.
    public static let fileMode: UInt32 = 0o600
    /// The mode of every folder the funnel creates: the owner only.
    public static let folderMode: UInt32 = 0o700

    /// Opens `path` (always with `O_CLOEXEC`). With `O_CREAT`, the file gets exactly `mode`
    /// (``fileMode`` unless given): it is created with it and then set with `fchmod`, so the
    /// process's umask neither opens it further nor takes the owner's write access away.
    public func open(_ path: String, flags: Int32, mode: UInt32 = FileSystem.fileMode) throws(StoreError) -> Int32 {
        if let simulated {
            try hooked("open", path, mutating: flags & O_CREAT != 0)
            return try simulated.open(path, flags: flags, mode: mode)
        }
        return try run("open", path, mutating: flags & O_CREAT != 0) { () -> Int32 in
            #if canImport(Glibc)
            let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
            #else
            let fd = Darwin.open(path, flags | O_CLOEXEC, mode_t(mode))
            #endif
            guard fd >= 0, flags & O_CREAT != 0 else { return fd }
            guard fchmod(fd, mode_t(mode)) == 0 else {
                let code = errno
                #if canImport(Glibc)
                Glibc.close(fd)
                #else
                Darwin.close(fd)
                #endif
                errno = code
                return -1
            }
            return fd
        }
    }

    /// Closes `fd`.
    public func close(_ fd: Int32, path: String?) throws(StoreError) {
        if let simulated {
            try hooked("close", path, mutating: false)
            return try simulated.close(fd, path: path)
        }
        // EINTR on close leaves the descriptor closed on Linux: do not retry it.
        if let hook, let code = hook(Call(name: "close", path: path, isMutating: false)) {
            throw .system(call: "close", errno: code, path: path)
        }
        #if canImport(Glibc)
        let r = Glibc.close(fd)
        #else
        let r = Darwin.close(fd)
        #endif
        if r == -1, errno != EINTR { throw .system(call: "close", errno: errno, path: path) }
    }

    /// Reads up to `count` bytes at `offset` into `buffer`; returns how many were read (0 at the end).
    public func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, offset: Int64,
                      path: String?) throws(StoreError) -> Int {
        if let simulated {
            try hooked("pread", path, mutating: false)
            return try simulated.pread(fd, into: buffer, offset: offset, path: path)
        }
        return try run("pread", path, mutating: false) { () -> Int in
            #if canImport(Glibc)
            Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
            #else
            Darwin.pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
            #endif
        }
    }

    /// Writes `bytes` at `offset`, going on after short writes until all are written.
    ///
    /// - Complexity: O(n).
    public func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, offset: Int64, path: String?) throws(StoreError) {
        if let simulated {
            try hooked("pwrite", path, mutating: true)
            return try simulated.pwrite(fd, bytes, offset: offset, path: path)
        }
        var done = 0
        while done < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[done...])
            let n = try run("pwrite", path, mutating: true) { () -> Int in
                #if canImport(Glibc)
                Glibc.pwrite(fd, rest.baseAddress, rest.count, off_t(offset) + off_t(done))
                #else
                Darwin.pwrite(fd, rest.baseAddress, rest.count, off_t(offset) + off_t(done))
                #endif
            }
            if n == 0 { throw .system(call: "pwrite", errno: EIO, path: path) }
            done += n
        }
    }

    /// ``pwriteAll(_:_:offset:path:)`` for an array.
    public func pwriteAll(_ fd: Int32, _ bytes: [UInt8], offset: Int64, path: String?) throws(StoreError) {
        // withUnsafeBytes rethrows untyped errors: carry the typed one out by hand.
        let failure: StoreError? = bytes.withUnsafeBytes { buffer in
            do throws(StoreError) {
                try pwriteAll(fd, buffer, offset: offset, path: path)
                return nil
            } catch { return error }
        }
        if let failure { throw failure }
    }

    /// Makes the file's data (and the metadata needed to read it, such as its length) durable.
    public func fdatasync(_ fd: Int32, path: String?) throws(StoreError) {
        if let simulated {
            try hooked("fdatasync", path, mutating: true)
            return try simulated.sync("fdatasync", fd, path: path)
        }
        _ = try run("fdatasync", path, mutating: true) { () -> Int32 in
            #if canImport(Glibc)
            Glibc.fdatasync(fd)
            #else
            fcntl(fd, F_FULLFSYNC)
            #endif
        }
    }

    /// Makes the file (or folder: its entries) and all its metadata durable.
    public func fsync(_ fd: Int32, path: String?) throws(StoreError) {
        if let simulated {
            try hooked("fsync", path, mutating: true)
            return try simulated.sync("fsync", fd, path: path)
        }
        _ = try run("fsync", path, mutating: true) { () -> Int32 in
            #if canImport(Glibc)
            Glibc.fsync(fd)
            #else
            fcntl(fd, F_FULLFSYNC)
            #endif
        }
    }

    /// Cuts the file to `length` bytes.
    public func ftruncate(_ fd: Int32, length: Int64, path: String?) throws(StoreError) {
        if let simulated {
            try hooked("ftruncate", path, mutating: true)
            return try simulated.ftruncate(fd, length: length, path: path)
        }
        _ = try run("ftruncate", path, mutating: true) { () -> Int32 in
            #if canImport(Glibc)
            Glibc.ftruncate(fd, off_t(length))
            #else
            Darwin.ftruncate(fd, off_t(length))
            #endif
        }
    }

    /// The file's length in bytes.
    public func size(_ fd: Int32, path: String?) throws(StoreError) -> Int64 {
        if let simulated {
            try hooked("fstat", path, mutating: false)
            return try simulated.size(fd, path: path)
        }
        var st = stat()
        _ = try run("fstat", path, mutating: false) { fstat(fd, &st) }
        return Int64(st.st_size)
    }

    /// When the file at `path` was last modified, in milliseconds since 1970.
    public func modificationMillis(_ path: String) throws(StoreError) -> UInt64 {
        if let simulated {
            try hooked("stat", path, mutating: false)
            return try simulated.node(at: path, "stat").modified
        }
        var st = stat()
        _ = try run("stat", path, mutating: false) { stat(path, &st) }
        #if canImport(Darwin)
        let t = st.st_mtimespec
        #else
        let t = st.st_mtim
        #endif
        return UInt64(max(0, t.tv_sec)) * 1000 + UInt64(max(0, t.tv_nsec)) / 1_000_000
    }

    /// Now, in milliseconds since 1970 (the wall clock).
    public static func nowMillis() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return UInt64(max(0, t.tv_sec)) * 1000 + UInt64(max(0, t.tv_nsec)) / 1_000_000
    }

    /// Renames `from` to `to`, replacing `to` atomically if it exists.
    public func rename(_ from: String, to: String) throws(StoreError) {
        if let simulated {
            try hooked("rename", "\(from) -> \(to)", mutating: true)
            return try simulated.rename(from, to: to)
        }
        _ = try run("rename", "\(from) -> \(to)", mutating: true) { () -> Int32 in
            #if canImport(Glibc)
            Glibc.rename(from, to)
            #else
            Darwin.rename(from, to)
            #endif
        }
    }

    /// Removes the file at `path`.
    public func unlink(_ path: String) throws(StoreError) {
        if let simulated {
            try hooked("unlink", path, mutating: true)
            return try simulated.remove(path, folder: false)
        }
        _ = try run("unlink", path, mutating: true) { () -> Int32 in
            #if canImport(Glibc)
            Glibc.unlink(path)
            #else
            Darwin.unlink(path)
            #endif
        }
    }

    /// Removes the empty folder at `path`.
    public func rmdir(_ path: String) throws(StoreError) {
        if let simulated {
            try hooked("rmdir", path, mutating: true)
            return try simulated.remove(path, folder: true)
        }
        _ = try run("rmdir", path, mutating: true) { () -> Int32 in
            #if canImport(Glibc)
            Glibc.rmdir(path)
            #else
            Darwin.rmdir(path)
            #endif
        }
    }

    /// Creates the folder at `path` with exactly ``folderMode`` (set again with `chmod` after
    /// `mkdir`, whatever the umask); an existing folder is fine and keeps its mode.
    public func mkdir(_ path: String) throws(StoreError) {
        do throws(StoreError) {
            if let simulated {
                try hooked("mkdir", path, mutating: true)
                return try simulated.mkdir(path, mode: Self.folderMode)
            }
            _ = try run("mkdir", path, mutating: true) { () -> Int32 in
                #if canImport(Glibc)
                let made = Glibc.mkdir(path, mode_t(Self.folderMode))
                #else
                let made = Darwin.mkdir(path, mode_t(Self.folderMode))
                #endif
                return made == 0 ? chmod(path, mode_t(Self.folderMode)) : made
            }
        } catch {
            guard case .system(_, EEXIST, _) = error else { throw error }
        }
    }

    /// The permission bits of `path` (`stat`, following links); `nil` if it cannot be examined.
    public func permissions(_ path: String) -> UInt32? {
        if let simulated { return try? simulated.node(at: path, "stat").mode }
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return UInt32(st.st_mode) & 0o7777
    }

    /// `flock(fd, operation)`; `LOCK_EX | LOCK_NB` fails with `EWOULDBLOCK` when held elsewhere.
    public func flock(_ fd: Int32, _ operation: Int32, path: String?) throws(StoreError) {
        if let simulated {
            try hooked("flock", path, mutating: false)
            return try simulated.flock(fd, operation, path: path)
        }
        _ = try run("flock", path, mutating: false) { () -> Int32 in
            #if canImport(Glibc)
            let call = Glibc.flock(_:_:)
            #else
            let call = Darwin.flock(_:_:)
            #endif
            return call(fd, operation)
        }
    }

    // MARK: Compositions

    /// Makes the folder's entries (creations, renames, removals) durable: `open` it, `fsync`, `close`.
    public func syncFolder(_ path: String) throws(StoreError) {
        let fd = try open(path, flags: O_RDONLY | O_DIRECTORY)
        defer { try? close(fd, path: path) }
        try fsync(fd, path: path)
    }

    /// The whole file's bytes.
    ///
    /// - Complexity: O(n).
    public func readAll(_ fd: Int32, path: String?) throws(StoreError) -> [UInt8] {
        try read(fd, count: Int(try size(fd, path: path)), at: 0, path: path)   // shrank under us: what was read
    }

    /// Up to `count` bytes at `offset` (fewer only at the end of the file), going on after short reads.
    ///
    /// - Complexity: O(n).
    public func read(_ fd: Int32, count: Int, at offset: Int64, path: String?) throws(StoreError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read: Result<Int, StoreError> = bytes.withUnsafeMutableBytes { b in
                do throws(StoreError) {
                    return .success(try pread(fd, into: UnsafeMutableRawBufferPointer(rebasing: b[done...]),
                                              offset: offset + Int64(done), path: path))
                } catch { return .failure(error) }
            }
            let n = try read.get()
            if n == 0 { break }
            done += n
        }
        return done == count ? bytes : Array(bytes[..<done])
    }

    /// The whole file at `path`.
    ///
    /// - Complexity: O(n).
    public func readFile(_ path: String) throws(StoreError) -> [UInt8] {
        let fd = try open(path, flags: O_RDONLY)
        defer { try? close(fd, path: path) }
        return try readAll(fd, path: path)
    }

    /// Writes `bytes` to `path` so that it either has them all or is as before, even after a crash:
    /// `path.tmp` is created, written, `fsync`ed, renamed over `path`, and the folder `fsync`ed.
    ///
    /// - Complexity: O(n).
    public func writeAtomically(_ bytes: [UInt8], to path: String, folder: String) throws(StoreError) {
        let tmp = path + ".tmp"
        let fd = try open(tmp, flags: O_WRONLY | O_CREAT | O_TRUNC)
        do throws(StoreError) {
            try pwriteAll(fd, bytes, offset: 0, path: tmp)
            try fsync(fd, path: tmp)
        } catch {
            try? close(fd, path: tmp)
            throw error
        }
        try close(fd, path: tmp)
        try rename(tmp, to: path)
        try syncFolder(folder)
    }

    /// Removes the folder at `path` and everything in it (files and links are unlinked, links
    /// never followed; folders removed bottom up); nothing there is fine. Not atomic: rename the folder out of the way first
    /// (``DataFolder/remove(_:)``), so that a crash leaves a half-removed folder only under a
    /// name nobody reads.
    ///
    /// - Complexity: O(f) calls for f entries.
    public func removeTree(_ path: String) throws(StoreError) {
        if let simulated {
            guard let node = try? simulated.node(at: path, "lstat") else { return }
            guard node.isFolder else { return try unlink(path) }
            for name in try list(path) { try removeTree(path + "/" + name) }
            return try rmdir(path)
        }
        // lstat: a link is removed, never followed (nothing outside `path` is touched).
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { return try unlink(path) }
        for name in try list(path) { try removeTree(path + "/" + name) }
        try rmdir(path)
    }

    /// The names in the folder at `path` (no `.` or `..`), sorted.
    ///
    /// - Complexity: O(n log n) for n entries.
    public func list(_ path: String) throws(StoreError) -> [String] {
        if let hook, let code = hook(Call(name: "readdir", path: path, isMutating: false)) {
            throw .system(call: "readdir", errno: code, path: path)
        }
        if let simulated { return try simulated.list(path) }
        do {
            return try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        } catch {
            let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
            let code = underlying?.domain == NSPOSIXErrorDomain ? Int32(underlying!.code)
                : (FileManager.default.fileExists(atPath: path) ? EIO : ENOENT)
            throw .system(call: "readdir", errno: code, path: path)
        }
    }

    /// Whether something exists at `path` (`stat` through FileManager; not a mutating call).
    public func exists(_ path: String) -> Bool {
        if let simulated { return simulated.exists(path) }
        return FileManager.default.fileExists(atPath: path)
    }
}
