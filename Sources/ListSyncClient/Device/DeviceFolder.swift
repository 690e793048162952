import Foundation
import ListCRDT
import ListSync
import ListStore

/// What a device knows of one document's standing with the daemon, kept beside its store.
///
/// Losing `acknowledged` costs nothing but bytes: the next connection resends what the daemon may
/// lack (the daemon drops duplicates). It is written atomically after acknowledgements and on
/// close, and before edits are first sent to a daemon not in `unanswered`.
struct SyncRecord: Codable, Hashable, Sendable {
    /// The epoch of the daemon's copy this copy belongs to; 0 while the daemon has never been told.
    var epoch: UInt64
    /// Whether the daemon has the document (it was created there, or fetched from it).
    var onServer: Bool
    /// What the daemon acknowledged as durable, by replica (raw id → Lamport counter).
    var acknowledged: [UInt64: UInt64]
    /// The name, for a document fetched before its first download finished.
    var name: String
    /// The daemons (`host:port`) sent edits of this device that have not answered for all of
    /// them (``ListSync/UnansweredSends``); written before the first send to each. Nil in records
    /// of older builds: none.
    var unanswered: [String]?
    /// Which daemon (`host:port`) first acknowledged each run of this device's own edits
    /// (``ListSync/AcknowledgingDaemons``): one only a daemon taken out of the device's daemons
    /// since acknowledged is sent again (Docs/Semantics.md §7, "An edit only a forgotten daemon
    /// held"). Nil in records of older builds: not known, and never sent again so.
    var acknowledgedBy: [AcknowledgingDaemons<String>.Run]?

    var version: VersionVector {
        VersionVector(Dictionary(uniqueKeysWithValues: acknowledged.map { (ReplicaID($0.key), $0.value) }))
    }

    mutating func acknowledge(_ v: VersionVector) {
        for (r, c) in v.entries where acknowledged[r.rawValue, default: 0] < c { acknowledged[r.rawValue] = c }
    }
}

/// The device's folder: the documents of a ``SyncClient`` and the device's replica id.
///
/// ```
/// <root>/lock                            held while a SyncClient (one process) uses the folder
/// <root>/replica                         this device's replica id (16 hex digits), made once
/// <root>/documents/<id>/name, ...        each document's store (ListStore's DataFolder layout)
/// <root>/documents/<id>/sync             its SyncRecord (JSON)
/// <root>/aside/<id>-<epoch>/             a copy set aside when the daemon's copy was reset
/// ```
final class DeviceFolder: Sendable {
    let root: String
    let data: DataFolder
    let replica: ReplicaID
    let fs: FileSystem

    /// Opens (creating) the folder and takes its lock; reads or makes the replica id.
    init(root: String, fileSystem: FileSystem = .system) throws(StoreError) {
        self.root = root
        fs = fileSystem
        try Self.makeParents(of: root, fs: fileSystem)
        data = try DataFolder(root: root, fileSystem: fileSystem)
        let path = root + "/replica"
        if fs.exists(path) {
            let text = String(decoding: try fs.readFile(path), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            // Exactly the 16 digits written: a file cut short (or padded) is not another id.
            guard text.count == 16, text.allSatisfy(\.isHexDigit), let raw = UInt64(text, radix: 16), raw != 0 else {
                data.close()
                throw .notOurs(path: path, reason: "not a replica id (16 hex digits, as written when the folder was made): \"\(text.prefix(40))\" (\(text.utf8.count) characters); restore it, or move the folder away to start a new device")
            }
            replica = ReplicaID(raw)
        } else {
            var id = ReplicaID.random()
            while id.rawValue == 0 { id = ReplicaID.random() }
            let hex = String(id.rawValue, radix: 16)
            let text = String(repeating: "0", count: max(0, 16 - hex.count)) + hex + "\n"
            try fs.writeAtomically(Array(text.utf8), to: path, folder: root)
            replica = id
        }
    }

    /// Creates the missing folders above `path` (an app's container exists; a CLI path may not).
    /// A relative path (`phone`, `lists/phone`) has its parents under the working folder.
    static func makeParents(of path: String, fs: FileSystem) throws(StoreError) {
        var missing: [String] = []
        var p = parent(of: path)
        while !p.isEmpty, p != "/", !fs.exists(p) {
            missing.append(p)
            p = parent(of: p)
        }
        for folder in missing.reversed() {
            try fs.mkdir(folder)
            let above = parent(of: folder)
            try fs.syncFolder(above.isEmpty ? "." : above)
        }
    }

    /// The folder above `path` (``parentFolder(of:)``).
    static func parent(of path: String) -> String { parentFolder(of: path) }

    func record(_ id: DocumentID) throws(StoreError) -> SyncRecord? {
        let path = data.folder(of: id) + "/sync"
        guard fs.exists(path) else { return nil }
        let bytes = try fs.readFile(path)
        guard let r = try? JSONDecoder().decode(SyncRecord.self, from: Data(bytes)) else {
            throw .notOurs(path: path, reason: "not a sync record")
        }
        return r
    }

    func write(_ record: SyncRecord, for id: DocumentID) throws(StoreError) {
        let folder = data.folder(of: id)
        let bytes = (try? JSONEncoder().encode(record)).map { Array($0) } ?? []
        try fs.writeAtomically(bytes, to: folder + "/sync", folder: folder)
    }

    /// Moves document `id`'s folder to `aside/<id>-<epoch>` and returns the new path.
    func setAside(_ id: DocumentID, epoch: UInt64) throws(StoreError) -> String {
        let aside = root + "/aside"
        if !fs.exists(aside) {
            try fs.mkdir(aside)
            try fs.syncFolder(root)
        }
        var target = aside + "/\(id)-\(String(epoch, radix: 16))"
        var n = 1
        while fs.exists(target) { n += 1; target = aside + "/\(id)-\(String(epoch, radix: 16))-\(n)" }
        try fs.rename(data.folder(of: id), to: target)
        try fs.syncFolder(aside)
        try fs.syncFolder(root + "/documents")
        return target
    }

    func close() { data.close() }
}

/// The folder above `path`, from its text alone: "" for a name in the current folder (`A`, `A/`,
/// `.`), "/" for one at the root; trailing and doubled slashes are ignored. (Foundation's
/// `deletingLastPathComponent` trapped on one-character names on Linux: SIGILL for `A`.)
///
/// - Complexity: O(n) in the path's length.
public func parentFolder(of path: String) -> String {
    var p = Substring(path)
    while p.count > 1, p.hasSuffix("/") { p = p.dropLast() }
    guard let slash = p.lastIndex(of: "/") else { return "" }
    var above = p[..<slash]
    while above.count > 1, above.hasSuffix("/") { above = above.dropLast() }
    return above.isEmpty ? "/" : String(above)
}
