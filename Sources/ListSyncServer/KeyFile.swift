import Foundation
import ListSyncCrypto

/// The pre-shared key file: 32 random bytes, mode 0600.
public enum KeyFile {
    /// Why a key file cannot be used.
    public enum Problem: Error, CustomStringConvertible, Equatable {
        /// The file does not exist.
        case missing(String)
        /// Group or others may read or write it.
        case tooOpen(String, mode: Int)
        /// It is not 32 bytes (or 64 hexadecimal digits).
        case wrongSize(String, bytes: Int)
        /// It could not be read or written.
        case io(String, String)

        public var description: String {
            switch self {
            case let .missing(p): return "key file \(p) does not exist"
            case let .tooOpen(p, mode):
                return "key file \(p) has mode \(String(mode, radix: 8)): others can read it; run `chmod 600 \(p)`"
            case let .wrongSize(p, n): return "key file \(p) holds \(n) bytes; a key is 32 bytes"
            case let .io(p, why): return "key file \(p): \(why)"
            }
        }
    }

    /// Reads the key at `path`, refusing a file that group or others can access.
    public static func read(_ path: String) throws(Problem) -> [UInt8] {
        let fm = FileManager.default
        guard fm.fileExists(atPath: path) else { throw .missing(path) }
        let mode: Int
        do {
            mode = ((try fm.attributesOfItem(atPath: path)[.posixPermissions]) as? NSNumber)?.intValue ?? 0
        } catch { throw .io(path, "\(error)") }
        guard mode & 0o077 == 0 else { throw .tooOpen(path, mode: mode) }
        guard let data = fm.contents(atPath: path) else { throw .io(path, "cannot read it") }
        let bytes = [UInt8](data)
        if bytes.count == 32 { return bytes }
        // Also accept 64 hex digits (and a trailing newline), for keys pasted by hand.
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.utf8.count == 64, let key = Hex.decode(text) { return key }
        throw .wrongSize(path, bytes: bytes.count)
    }

    /// Reads the key at `path`, or creates one (32 random bytes, mode 0600) if there is none.
    /// Returns the key and whether it was created.
    public static func readOrCreate(_ path: String) throws(Problem) -> (key: [UInt8], created: Bool) {
        if FileManager.default.fileExists(atPath: path) { return (try read(path), false) }
        let key = SecureRandom.bytes(32)
        let ok = FileManager.default.createFile(atPath: path, contents: Data(key), attributes: [.posixPermissions: 0o600])
        guard ok else { throw .io(path, "cannot create it") }
        return (key, true)
    }
}
