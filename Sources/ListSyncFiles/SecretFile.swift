import ListStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Small files that hold a secret (the pre-shared key, the admin token): read only when nobody but
/// the owner can read or write them, and created with mode 0600 from their first instant.
///
/// Both go through the store's file funnel (``FileSystem``), so tests can watch every call.
package enum SecretFile {
    /// Why a secret file cannot be used.
    package enum Failure: Error, Equatable {
        /// There is no file.
        case missing
        /// It is not a regular file: a folder, a device, a socket or a pipe (what it is, in words).
        case notAFile(kind: String)
        /// Group or others may read or write it (its permission bits).
        case tooOpen(mode: UInt32)
        /// It is larger than any secret file should be (its size in bytes).
        case tooLarge(bytes: Int)
        /// A file call failed (the store's description of it).
        case io(String)
    }

    /// Secret files are tiny; a larger one is refused before it is read.
    package static let maxBytes = 4096

    /// Reads the file at `path`. The mode is checked on the open descriptor (`fstat`), so the
    /// file read is the file checked, before a byte of it is read.
    ///
    /// - Complexity: O(n) in the file's size, at most `maxBytes` (default ``maxBytes``).
    package static func read(_ path: String, fileSystem: FileSystem, maxBytes: Int = maxBytes) throws(Failure) -> [UInt8] {
        let fd: Int32
        do { fd = try fileSystem.open(path, flags: O_RDONLY) } catch {
            if case .system(_, ENOENT, _) = error { throw .missing }
            throw .io(error.description)
        }
        defer { try? fileSystem.close(fd, path: path) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .io("fstat failed on \(path) (errno \(errno))") }
        // A folder (a shared one is mode 1777) is not a secret file: its mode is beside the point.
        guard UInt32(st.st_mode) & UInt32(S_IFMT) == UInt32(S_IFREG) else { throw .notAFile(kind: kind(of: UInt32(st.st_mode))) }
        let mode = UInt32(st.st_mode) & 0o7777
        guard mode & 0o077 == 0 else { throw .tooOpen(mode: mode) }
        guard st.st_size <= maxBytes else { throw .tooLarge(bytes: Int(st.st_size)) }
        do { return try fileSystem.readAll(fd, path: path) } catch { throw .io(error.description) }
    }

    /// Creates `path` holding `bytes`: `open(O_CREAT | O_EXCL, 0600)`, so the file is never
    /// readable by anyone else, not even before its bytes are written; then written, `fsync`ed,
    /// and its folder `fsync`ed. Returns `false`, touching nothing, when a file is already there
    /// (another process made it first). A failed write removes the file it made.
    package static func create(_ path: String, bytes: [UInt8], fileSystem: FileSystem) throws(Failure) -> Bool {
        let fd: Int32
        do { fd = try fileSystem.open(path, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600) } catch {
            if case .system(_, EEXIST, _) = error { return false }
            throw .io(error.description)
        }
        do throws(StoreError) {
            try fileSystem.pwriteAll(fd, bytes, offset: 0, path: path)
            try fileSystem.fsync(fd, path: path)
        } catch {
            try? fileSystem.close(fd, path: path)
            try? fileSystem.unlink(path)
            throw .io(error.description)
        }
        do throws(StoreError) {
            try fileSystem.close(fd, path: path)
            try fileSystem.syncFolder(folder(of: path))
        } catch { throw .io(error.description) }
        return true
    }

    /// What a file that is not a regular one is, in words (its `st_mode` type bits).
    package static func kind(of mode: UInt32) -> String {
        switch mode & UInt32(S_IFMT) {
        case UInt32(S_IFDIR): return "a folder"
        case UInt32(S_IFCHR), UInt32(S_IFBLK): return "a device"
        case UInt32(S_IFSOCK): return "a socket"
        case UInt32(S_IFIFO): return "a pipe"
        default: return "not a regular file"
        }
    }

    /// The folder that holds `path` (`.` for a bare name).
    package static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
