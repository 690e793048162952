import Foundation
import ListCRDT
import ListSync
import ListStore
import ListSyncTCP
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One device the operator issued a credential for (a row of `<data>/devices.json`).
public struct DeviceRecord: Codable, Equatable, Sendable {
    /// The device id, 32 hexadecimal digits.
    public var id: String
    public var name: String
    /// Documents it may use (ids); nil: every document.
    public var documents: [String]?
    public var readOnly: Bool
    /// Expiry, seconds since 1970; nil: never.
    public var expires: UInt64?
    /// When it was issued and, if it was, revoked (seconds since 1970).
    public var created: UInt64
    public var revoked: UInt64?

    /// The record of a credential just issued.
    public init(claims: DeviceClaims, created: UInt64) {
        id = claims.idText
        name = claims.name
        documents = claims.documents?.map(\.description)
        readOnly = claims.readOnly
        expires = claims.expires
        self.created = created
    }
}

/// The devices file of a data folder: every credential issued and which are revoked
/// (Docs/Security.md, "Credentials"). `listsync device` edits it, whether or not the daemon
/// runs; the daemon rereads it when it changes and closes the connections of revoked devices.
///
/// Writes replace the file atomically (``FileSystem/writeAtomically(_:to:folder:)``) under an
/// `flock` on `devices.lock`, so two commands at once do not lose each other's rows. Every
/// system call goes through the store's ``FileSystem`` funnel.
public struct DeviceRegistry: Sendable {
    /// The file's path.
    public let path: String
    /// The rows by device id.
    public private(set) var records: [String: DeviceRecord] = [:]
    private let fs: FileSystem
    /// The bytes last parsed (nil: the file did not exist).
    private var last: [UInt8]?

    /// The registry of the data folder at `dataFolder` (not read yet: ``reload()``).
    public init(dataFolder: String, fileSystem: FileSystem = .system) {
        path = dataFolder + "/devices.json"
        fs = fileSystem
    }

    /// Rereads the file; returns whether it changed since the last read.
    ///
    /// - Complexity: O(file size): one read, and a parse only when the bytes changed.
    /// - Throws: ``DeviceRegistryError`` for a file that cannot be read or parsed (the rows read
    ///   before are kept).
    @discardableResult
    public mutating func reload() throws(DeviceRegistryError) -> Bool {
        let bytes = try Self.bytes(path, fs)
        guard bytes != last else { return false }
        records = try Self.parse(bytes, path)
        last = bytes
        return true
    }

    /// Why a device holding valid `claims` is refused at `now` (seconds since 1970), or nil.
    /// Unknown devices are refused too: a credential counts only while its row is in the file.
    public func refusal(for claims: DeviceClaims, now: UInt64) -> (SyncErrorCode, String)? {
        guard let r = records[claims.idText], r.revoked == nil else {
            return (.revoked, "this device's credential (\(claims.name)) was revoked")
        }
        if claims.isExpired(at: now) { return (.expired, "this device's credential (\(claims.name)) has expired") }
        return nil
    }

    /// Changes the devices file of `dataFolder` under its lock: reads it, applies `body`, writes
    /// it back atomically (mode 0600).
    ///
    /// - Throws: ``DeviceRegistryError`` for a file that cannot be read, parsed or written, or
    ///   what `body` throws.
    public static func update<T>(dataFolder: String, fileSystem fs: FileSystem = .system,
                                 _ body: (inout [String: DeviceRecord]) throws -> T) throws -> T {
        let path = dataFolder + "/devices.json"
        let lockPath = dataFolder + "/devices.lock"
        let fd: Int32
        do {
            fd = try fs.open(lockPath, flags: O_RDWR | O_CREAT, mode: 0o600)
            do { try fs.flock(fd, LOCK_EX, path: lockPath) } catch {
                try? fs.close(fd, path: lockPath)
                throw error
            }
        } catch { throw DeviceRegistryError.io(lockPath, "\(error)") }
        defer { try? fs.close(fd, path: lockPath) }
        var records = try parse(try bytes(path, fs), path)
        let result = try body(&records)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let rows = records.values.sorted { ($0.created, $0.id) < ($1.created, $1.id) }
        do {
            try fs.writeAtomically(Array(try encoder.encode(rows)) + [10], to: path, folder: dataFolder)
        } catch { throw DeviceRegistryError.io(path, "\(error)") }
        return result
    }

    /// The rows of the devices file of `dataFolder` (none when it does not exist).
    public static func read(dataFolder: String, fileSystem fs: FileSystem = .system) throws(DeviceRegistryError) -> [String: DeviceRecord] {
        let path = dataFolder + "/devices.json"
        return try parse(try bytes(path, fs), path)
    }

    private static func bytes(_ path: String, _ fs: FileSystem) throws(DeviceRegistryError) -> [UInt8]? {
        do { return try fs.readFile(path) } catch {
            if case let .system(_, errno, _) = error, errno == ENOENT { return nil }
            throw .io(path, "\(error)")
        }
    }

    private static func parse(_ bytes: [UInt8]?, _ path: String) throws(DeviceRegistryError) -> [String: DeviceRecord] {
        guard let bytes else { return [:] }
        do {
            let rows = try JSONDecoder().decode([DeviceRecord].self, from: Data(bytes))
            return Dictionary(rows.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        } catch {
            throw .malformed(path, "\(error)")
        }
    }
}

/// Why the devices file cannot be used.
public enum DeviceRegistryError: Error, Equatable, CustomStringConvertible {
    case io(String, String)
    case malformed(String, String)

    public var description: String {
        switch self {
        case let .io(path, why): return "devices file \(path): \(why)"
        case let .malformed(path, why): return "devices file \(path) does not parse: \(why)"
        }
    }
}
