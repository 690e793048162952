import Foundation
import ListStore
import ListSyncCrypto

/// The pre-shared key file: 32 random bytes, mode 0600 (Docs/Security.md, "Files").
public enum KeyFile {
    /// Why a key file cannot be used.
    public enum Problem: Error, CustomStringConvertible, Equatable {
        /// The file does not exist.
        case missing(String)
        /// It is a folder (or a device, a socket, a pipe): `kind` says which.
        case notAFile(String, kind: String)
        /// Group or others may read or write it.
        case tooOpen(String, mode: Int)
        /// It is not 32 bytes (or 64 hexadecimal digits).
        case wrongSize(String, bytes: Int)
        /// It could not be read or written.
        case io(String, String)

        public var description: String {
            switch self {
            case let .missing(p): return "key file \(p) does not exist"
            case let .notAFile(p, kind):
                return "key file \(p) is \(kind), not a file: name the key file itself (32 bytes, mode 0600)"
            case let .tooOpen(p, mode):
                return "key file \(p) has mode \(String(mode, radix: 8)): group or others can read it or write it; run `chmod 600 \(p)`"
            case let .wrongSize(p, n): return "key file \(p) holds \(n) bytes; a key is 32 bytes (or 64 hexadecimal digits)"
            case let .io(p, why): return "key file \(p): \(why)"
            }
        }

        init(_ failure: SecretFile.Failure, path: String) {
            switch failure {
            case .missing: self = .missing(path)
            case let .notAFile(kind): self = .notAFile(path, kind: kind)
            case let .tooOpen(mode): self = .tooOpen(path, mode: Int(mode))
            case let .tooLarge(n): self = .wrongSize(path, bytes: n)
            case let .io(why): self = .io(path, why)
            }
        }
    }

    /// Reads the key at `path`, refusing a file that group or others can read or write.
    public static func read(_ path: String, fileSystem: FileSystem = .system) throws(Problem) -> [UInt8] {
        let bytes: [UInt8]
        do { bytes = try SecretFile.read(path, fileSystem: fileSystem) } catch { throw Problem(error, path: path) }
        if bytes.count == 32 { return bytes }
        // Also accept 64 hex digits (and a trailing newline), for keys pasted by hand.
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.utf8.count == 64, let key = Hex.decode(text) { return key }
        throw .wrongSize(path, bytes: bytes.count)
    }

    /// Reads the key at `path`, or creates one (32 random bytes) if there is none. A new key file
    /// is created with `O_CREAT | O_EXCL` and mode 0600, so it is never readable by others, not
    /// even for an instant; if another process creates it first, its key is read.
    /// Returns the key and whether it was created.
    public static func readOrCreate(_ path: String, fileSystem: FileSystem = .system) throws(Problem)
        -> (key: [UInt8], created: Bool) {
        do { return (try read(path, fileSystem: fileSystem), false) } catch .missing(_) {}
        let key = SecureRandom.bytes(32)
        let made: Bool
        do { made = try SecretFile.create(path, bytes: key, fileSystem: fileSystem) } catch { throw Problem(error, path: path) }
        return made ? (key, true) : (try read(path, fileSystem: fileSystem), false)
    }
}
