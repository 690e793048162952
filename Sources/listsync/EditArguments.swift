import Foundation
import ListCRDT
import ListSyncClient
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A command that could not do its work, for a reason that is not the command line's (exit 1):
/// a section that does not exist, a file that cannot be written or read.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
}

// MARK: Values: TEXT, or --value-file FILE (- for standard input)

/// `--value-file FILE` in a command's help.
let valueFileHelp = "  --value-file FILE    the value from FILE instead of TEXT (- reads standard input; one\n                       trailing newline is dropped)\n"

/// Checks, before connecting, that an edit's value comes from exactly one place: the TEXT
/// argument at `index`, or `--value-file FILE` (`-`: standard input), a file that can be read.
///
/// - Throws: ``UsageError`` naming what is missing, doubled or unreadable.
func checkValueSource(_ o: Options, command: String, textAt index: Int) throws {
    let file = o.value("--value-file")
    let hasText = o.positional.count > index
    if file != nil, hasText {
        throw UsageError(message: "\(command) takes its value as TEXT or from --value-file, not both")
    }
    guard let file else {
        guard hasText else { throw UsageError(message: "\(command) needs TEXT, or --value-file FILE (- for standard input)") }
        return
    }
    guard file != "-" else { return }
    var folder: ObjCBool = false
    guard FileManager.default.fileExists(atPath: file, isDirectory: &folder) else {
        throw UsageError(message: "--value-file \(file) does not exist")
    }
    guard !folder.boolValue else { throw UsageError(message: "--value-file \(file) is a folder, not a file") }
    guard FileManager.default.isReadableFile(atPath: file) else { throw UsageError(message: "--value-file \(file) cannot be read (permissions)") }
}

/// The value of an edit: the TEXT argument at `index`, or the bytes of `--value-file` (standard
/// input for `-`) less one trailing newline. Reads at most one byte more than the engine takes,
/// so that an endless input is refused as too large rather than read whole.
///
/// - Complexity: O(n) in the value's size, at most ``ListDocument/defaultMaxValueSize`` + 1.
func editValue(_ o: Options, textAt index: Int) throws -> Data {
    guard let file = o.value("--value-file") else { return Data(o.positional[index].utf8) }
    let handle: FileHandle
    if file == "-" { handle = FileHandle.standardInput } else {
        guard let h = FileHandle(forReadingAtPath: file) else { throw CommandFailure(description: "cannot read --value-file \(file)") }
        handle = h
    }
    defer { if file != "-" { try? handle.close() } }
    let limit = ListDocument.defaultMaxValueSize + 1
    var data = Data()
    while data.count < limit {
        let chunk = handle.readData(ofLength: limit - data.count)
        if chunk.isEmpty { break }
        data.append(chunk)
    }
    if data.last == UInt8(ascii: "\n") { data.removeLast() }
    return data
}

// MARK: Index paths against the document

/// Checks `path` against the document as it is: a section that does not exist is named as such,
/// with how many there are (the engine's error only says the row is out of range). `inserting`:
/// a section may be inserted at `0...count`.
///
/// - Throws: ``CommandFailure``.
func checkExists(_ path: PathArgument, in snapshot: ListSnapshot, inserting: Bool = false) throws {
    let count = snapshot.numberOfSections
    let section: Int
    switch path {
    case let .section(s):
        if inserting {
            guard s <= count else {
                throw CommandFailure(description: "a section can be inserted at 0 to \(count), not \(s): the document has \(sections(count))")
            }
            return
        }
        section = s
    case let .item(p): section = p.section
    }
    guard section < count else {
        throw CommandFailure(description: "section \(section) does not exist: the document has \(sections(count))"
            + (count == 0 ? "" : " (0 to \(count - 1))"))
    }
}

private func sections(_ n: Int) -> String { n == 1 ? "1 section" : "\(n) sections" }

// MARK: Writing a file

/// Writes `data` to `path` (created 0644 or truncated), saying in words why it could not:
/// a folder that does not exist, a folder named as the file, no permission.
///
/// - Throws: ``CommandFailure``.
/// - Complexity: O(n) in the size of `data`.
func writeFile(_ data: Data, to path: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw CommandFailure(description: "cannot write \(path): \(fileProblem(path, errno))") }
    defer { close(fd) }
    try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
        var offset = 0
        while offset < raw.count {
            let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw CommandFailure(description: "cannot write \(path): \(fileProblem(path, errno))")
            }
            offset += n
        }
    }
}

/// The size of the file at `path` in bytes (`stat`, not FileManager, which traps on a
/// one-character name on Linux), or 0.
func fileSize(_ path: String) -> Int {
    var st = stat()
    return stat(path, &st) == 0 ? Int(st.st_size) : 0
}

/// `code` (an errno of opening or writing `path`) in words.
func fileProblem(_ path: String, _ code: Int32) -> String {
    let folder = parentFolder(of: path)
    let shownFolder = folder.isEmpty ? "." : folder
    switch code {
    case ENOENT: return "the folder \(shownFolder) does not exist"
    case ENOTDIR: return "a part of \(shownFolder) is not a folder"
    case EISDIR: return "it is a folder; name a file in it"
    case EACCES, EPERM: return "permission denied (the folder \(shownFolder) or the file is not writable)"
    case EROFS: return "the file system is read-only"
    case ENOSPC: return "the disk is full"
    default: return String(cString: strerror(code))
    }
}
