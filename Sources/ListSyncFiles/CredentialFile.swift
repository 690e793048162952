import ListStore
import ListSyncTCP

/// A device's credential file (`listsync device add`): created with mode 0600 from its first
/// instant and never replacing a file, read only when nobody but its owner can read it
/// (``SecretFile``, Docs/Security.md, "Credentials").
public enum CredentialFile {
    /// Why a credential file cannot be used or written.
    public enum Problem: Error, CustomStringConvertible, Equatable {
        case missing(String)
        case notAFile(String, kind: String)
        case tooOpen(String, mode: Int)
        case exists(String)
        case invalid(String, CredentialError)
        case io(String, String)

        public var description: String {
            switch self {
            case let .missing(p): return "credential file \(p) does not exist"
            case let .notAFile(p, kind):
                return "credential file \(p) is \(kind), not a file: name the file `listsync device add` wrote"
            case let .tooOpen(p, mode):
                return "credential file \(p) has mode \(String(mode, radix: 8)): group or others can read it or write it; run `chmod 600 \(p)`"
            case let .exists(p): return "\(p) exists; a credential never replaces a file (choose another --out)"
            case let .invalid(p, e): return "\(p): \(e)"
            case let .io(p, why): return "credential file \(p): \(why)"
            }
        }
    }

    /// The largest credential file: 64 documents and the encoded claims fit with room to spare.
    static let maxBytes = 16 << 10

    /// Reads the credential at `path`.
    public static func read(_ path: String, fileSystem: FileSystem = .system) throws(Problem) -> Credential {
        let bytes: [UInt8]
        do { bytes = try SecretFile.read(path, fileSystem: fileSystem, maxBytes: maxBytes) } catch {
            switch error {
            case .missing: throw .missing(path)
            case let .notAFile(kind): throw .notAFile(path, kind: kind)
            case let .tooOpen(mode): throw .tooOpen(path, mode: Int(mode))
            case let .tooLarge(n): throw .invalid(path, .invalid("\(n) bytes is too large for a credential file"))
            case let .io(why): throw .io(path, why)
            }
        }
        do { return try Credential(fileContents: bytes) } catch { throw .invalid(path, error) }
    }

    /// Writes `credential` to a new file at `path` (mode 0600, `O_EXCL`, fsynced).
    public static func create(_ credential: Credential, at path: String, fileSystem: FileSystem = .system) throws(Problem) {
        let made: Bool
        do { made = try SecretFile.create(path, bytes: credential.fileContents(), fileSystem: fileSystem) } catch {
            guard case let .io(why) = error else { throw .io(path, "\(error)") }
            throw .io(path, why)
        }
        guard made else { throw .exists(path) }
    }
}
