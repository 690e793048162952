import Foundation
import ListCRDT
import ListStore

/// The daemon's own replica id in `DIR/replica` (Docs/Daemon.md, "Files"): drawn once per data
/// folder, for the sections the daemon makes and its node id in discovery.
///
/// Written as `replica <16 hex digits>\n` (mode 0600, atomically), so that a file cut short is
/// told from another id: it lacks the newline or has fewer digits, and the daemon refuses to start
/// naming the file rather than taking what is left as a different replica. A file of an earlier
/// build (bare hex digits, no padding, no newline) is read as it is and rewritten in this form; a
/// cut file of that form cannot be told from a short id, and is taken as one (once).
enum DaemonReplicaFile {
    static let prefix = "replica "

    /// The id in `folder/replica`, made and written when the file is absent.
    static func readOrCreate(in folder: String, fileSystem fs: FileSystem) throws(DaemonError) -> ReplicaID {
        let path = folder + "/replica"
        guard fs.exists(path) else {
            var id = ReplicaID.random()
            while id.rawValue == 0 { id = ReplicaID.random() }
            try write(id, to: path, folder: folder, fs: fs)
            return id
        }
        let bytes: [UInt8]
        do { bytes = try fs.readFile(path) } catch {
            throw .dataFolder("cannot read \(path): \(error)")
        }
        switch parse(bytes) {
        case .current(let id):
            return id
        case .earlier(let id):
            try write(id, to: path, folder: folder, fs: fs)
            return id
        case .damaged(let why):
            throw .dataFolder("\(path) is not a replica id (\(why)); restore it from a backup, or remove it to give this daemon a new replica id")
        }
    }

    enum Parsed: Equatable {
        /// This build's form.
        case current(ReplicaID)
        /// An earlier build's bare hex digits.
        case earlier(ReplicaID)
        case damaged(String)
    }

    /// What `bytes` hold (no I/O; tested on every cut of a written file).
    static func parse(_ bytes: [UInt8]) -> Parsed {
        let text = String(decoding: bytes, as: UTF8.self)
        if text.hasPrefix(prefix) || (!text.isEmpty && prefix.hasPrefix(text)) {
            let digits = text.dropFirst(prefix.count)
            guard digits.hasSuffix("\n") else { return .damaged("cut short: no line end") }
            let hex = digits.dropLast()
            guard hex.utf8.count == 16, hex.utf8.allSatisfy(isHexDigit), let raw = UInt64(hex, radix: 16), raw != 0 else {
                return .damaged("\(hex.utf8.count) characters where 16 hex digits are written")
            }
            return .current(ReplicaID(raw))
        }
        guard (1 ... 16).contains(bytes.count), bytes.allSatisfy(isHexDigit),
              let raw = UInt64(text, radix: 16), raw != 0 else {
            return .damaged("\(bytes.count) bytes that are neither \"replica\" and 16 hex digits nor an earlier build's hex id")
        }
        return .earlier(ReplicaID(raw))
    }

    /// `replica <16 lowercase hex digits>\n`.
    static func encode(_ id: ReplicaID) -> [UInt8] {
        let hex = String(id.rawValue, radix: 16)
        return Array((prefix + String(repeating: "0", count: 16 - hex.count) + hex + "\n").utf8)
    }

    private static func isHexDigit(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x66) || (b >= 0x41 && b <= 0x46)
    }

    private static func write(_ id: ReplicaID, to path: String, folder: String, fs: FileSystem) throws(DaemonError) {
        do { try fs.writeAtomically(encode(id), to: path, folder: folder) } catch {
            throw .dataFolder("cannot write \(path): \(error)")
        }
    }
}
