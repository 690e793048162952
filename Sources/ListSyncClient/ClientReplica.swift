import Foundation
import ListCRDT
import ListStore
import Synchronization

/// A replica id kept in a folder for a client that holds no copy of its own and opens documents
/// afresh from the daemon each run (the `listsync` commands without `--replica`): each run edits
/// as the same replica, so the document's version vector gains one entry per client, not one per
/// command.
///
/// Reusing an id is safe only when this run knows every operation that id has made in the
/// document: a version vector counts each replica's operations by their greatest counter, so an
/// operation made twice under one id (or one with a gap before it) would be taken for one the
/// other side already has. So, before operations go out, ``willSend(_:upTo:)`` records their
/// greatest counter durably; after a document is opened, ``mayReuse(in:version:)`` checks that the
/// daemon's copy holds everything recorded. When it does not (an edit that never became durable,
/// or another daemon that has not yet heard of it), the caller ``renew()``s: a fresh random id,
/// which can never collide.
///
/// Several processes at once each take their own slot (`slot-0` … `slot-15`, held with `flock`
/// for the life of the object); when every slot is held, ``acquire(folder:slots:fileSystem:)``
/// returns nil and the caller uses a random id as before.
///
/// The slot file is text, rewritten whole and synced at each record, and ends with a CRC32C of
/// what precedes it; a file that does not check out (a torn write) is renewed, never trusted.
public final class ClientReplica: Sendable {
    struct State: Equatable {
        var replica: ReplicaID
        /// The greatest counter of this replica's operations that may have gone out, by document.
        var sent: [DocumentID: UInt64]
    }

    /// The file of the slot held.
    public let path: String
    private let fd: Int32
    private let fs: FileSystem
    private let state: Mutex<State>

    /// The replica id to edit as (until ``renew()``).
    public var replica: ReplicaID { state.withLock { $0.replica } }

    private init(path: String, fd: Int32, fs: FileSystem, state: State) {
        self.path = path
        self.fd = fd
        self.fs = fs
        self.state = Mutex(state)
    }

    deinit { try? fs.close(fd, path: path) }

    /// Takes the first free slot in `folder` (created, mode 0700, with any missing parents) and
    /// reads its id, or makes one. Returns nil when all `slots` are held by other processes.
    ///
    /// - Throws: ``StoreError`` when the folder or a slot file cannot be made or read.
    public static func acquire(folder: String, slots: Int = 16, fileSystem fs: FileSystem = .system) throws(StoreError) -> ClientReplica? {
        try DeviceFolder.makeParents(of: folder, fs: fs)
        if !fs.exists(folder) { try fs.mkdir(folder) }
        for n in 0..<slots {
            let path = folder + "/slot-\(n)"
            let fd = try fs.open(path, flags: O_RDWR | O_CREAT | O_CLOEXEC, mode: 0o600)
            do {
                try fs.flock(fd, LOCK_EX | LOCK_NB, path: path)
            } catch {
                try? fs.close(fd, path: path)
                continue   // held by another process (or not lockable): the next slot
            }
            let bytes: [UInt8]
            do { bytes = try fs.readAll(fd, path: path) } catch {
                try? fs.close(fd, path: path)
                throw error
            }
            let slot = ClientReplica(path: path, fd: fd, fs: fs, state: Self.decode(bytes) ?? State(replica: ReplicaID(0), sent: [:]))
            if slot.replica.rawValue == 0 { try slot.renew() }
            return slot
        }
        return nil
    }

    /// Whether the daemon's copy of `document`, at `version`, holds every operation this id may
    /// have sent to it: only then may this run edit `document` as ``replica``.
    public func mayReuse(in document: DocumentID, version: VersionVector) -> Bool {
        state.withLock { s in version[s.replica] >= (s.sent[document] ?? 0) }
    }

    /// Records, durably, that operations of ``replica`` up to `counter` may go out to `document`.
    /// Call it before sending them; if it throws, do not send.
    public func willSend(_ document: DocumentID, upTo counter: UInt64) throws(StoreError) {
        let next: State? = state.withLock { s in
            guard counter > (s.sent[document] ?? 0) else { return nil }
            s.sent[document] = counter
            return s
        }
        if let next { try write(next) }
    }

    /// Replaces the id with a fresh random one (and forgets what the old one sent), durably.
    public func renew() throws(StoreError) {
        var id = ReplicaID.random()
        while id.rawValue == 0 { id = ReplicaID.random() }
        let next = State(replica: id, sent: [:])
        try write(next)
        state.withLock { $0 = next }
    }

    private func write(_ s: State) throws(StoreError) {
        let bytes = Self.encode(s)
        try fs.pwriteAll(fd, bytes, offset: 0, path: path)
        try fs.ftruncate(fd, length: Int64(bytes.count), path: path)
        try fs.fsync(fd, path: path)
    }

    static let magic = "listsync-client-replica 1"

    static func encode(_ s: State) -> [UInt8] {
        var text = magic + "\nreplica \(hex16(s.replica.rawValue))\n"
        for (doc, counter) in s.sent.sorted(by: { $0.key < $1.key }) { text += "sent \(doc) \(counter)\n" }
        var crc = CRC32C()
        crc.update(Array(text.utf8))
        return Array((text + "end \(hex8(crc.value))\n").utf8)
    }

    /// The state in `bytes`, or nil when they are not a whole slot file whose CRC checks out.
    static func decode(_ bytes: [UInt8]) -> State? {
        guard let endLine = bytes.dropLast().lastIndex(of: UInt8(ascii: "\n")), bytes.last == UInt8(ascii: "\n") else { return nil }
        let body = Array(bytes[...endLine])
        let trailer = String(decoding: bytes[(endLine + 1)...].dropLast(), as: UTF8.self)
        var crc = CRC32C()
        crc.update(body)
        guard trailer == "end \(hex8(crc.value))" else { return nil }
        let lines = String(decoding: body, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        guard lines.first == Substring(magic), lines.count >= 2 else { return nil }
        let head = lines[lines.startIndex + 1].split(separator: " ")
        guard head.count == 2, head[0] == "replica", let raw = UInt64(head[1], radix: 16), raw != 0 else { return nil }
        var s = State(replica: ReplicaID(raw), sent: [:])
        for line in lines.dropFirst(2) {
            let f = line.split(separator: " ")
            guard f.count == 3, f[0] == "sent", let doc = DocumentID(hex: String(f[1])), let c = UInt64(f[2]) else { return nil }
            s.sent[doc] = c
        }
        return s
    }

    private static func hex16(_ v: UInt64) -> String {
        let h = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 16 - h.count)) + h
    }

    private static func hex8(_ v: UInt32) -> String {
        let h = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 8 - h.count)) + h
    }
}
