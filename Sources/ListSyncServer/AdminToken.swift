import ListStore
import ListSyncCrypto
import ListSyncHTTP
import ListSyncTCP
import ListSyncFiles

/// The admin port's token file (Docs/Security.md, "Admin port"): one line, the token that
/// `/readyz` and `/metrics` ask for in `Authorization: Bearer <token>`. Like the key file, it is
/// refused when group or others can read or write it, and a new one is created with mode 0600.
enum AdminToken {
    /// The token file's name in the data folder, when `--admin-token-file` names none.
    static let defaultName = "admin-token"

    /// The token file the admin port uses, and whether it was given (it must exist) rather than
    /// made in the data folder; `nil` when the port stays open: on loopback with no file given.
    static func file(loopback: Bool, configuration: DaemonConfiguration) -> (path: String, given: Bool)? {
        if let given = configuration.adminTokenFile { return (given, true) }
        return loopback ? nil : (configuration.dataFolder + "/" + defaultName, false)
    }

    /// Reads the token in `path`.
    ///
    /// - Throws: ``DaemonError/admin(_:)`` saying what is wrong and how to fix it.
    static func read(_ path: String, fileSystem: FileSystem) throws(DaemonError) -> HTTPBearerToken {
        let bytes: [UInt8]
        do { bytes = try SecretFile.read(path, fileSystem: fileSystem) } catch { throw problem(error, path) }
        guard let token = HTTPBearerToken(String(decoding: bytes, as: UTF8.self)) else {
            throw .admin("admin token file \(path) does not hold a token: one line of \(HTTPBearerToken.lengths.lowerBound) to "
                + "\(HTTPBearerToken.lengths.upperBound) letters, digits or -._~+/ (make one: "
                + "`(umask 077; od -An -N32 -tx1 /dev/urandom | tr -d ' \\n' > \(path))`)")
        }
        return token
    }

    /// Reads the token in `path`, or creates the file with a new token (32 random bytes as 64
    /// hexadecimal digits, mode 0600 from its creation) if there is none. Returns whether it was created.
    static func readOrCreate(_ path: String, fileSystem: FileSystem) throws(DaemonError) -> (HTTPBearerToken, created: Bool) {
        do { return (try read(path, fileSystem: fileSystem), false) } catch {
            guard !fileSystem.exists(path) else { throw error }
        }
        let digits = Array("0123456789abcdef".utf8)
        let text = String(decoding: SecureRandom.bytes(32).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
        let made: Bool
        do { made = try SecretFile.create(path, bytes: Array((text + "\n").utf8), fileSystem: fileSystem) } catch {
            throw problem(error, path)
        }
        guard made else { return (try read(path, fileSystem: fileSystem), false) }
        return (HTTPBearerToken(text)!, true)
    }

    private static func problem(_ failure: SecretFile.Failure, _ path: String) -> DaemonError {
        switch failure {
        case .missing:
            return .admin("admin token file \(path) does not exist; make one: "
                + "`(umask 077; od -An -N32 -tx1 /dev/urandom | tr -d ' \\n' > \(path))`")
        case let .notAFile(kind):
            return .admin("admin token file \(path) is \(kind), not a file: name the token file itself")
        case let .tooOpen(mode):
            return .admin("admin token file \(path) has mode \(String(mode, radix: 8)): group or others can read it or write it; "
                + "run `chmod 600 \(path)`")
        case let .tooLarge(n):
            return .admin("admin token file \(path) holds \(n) bytes: not a token")
        case let .io(why):
            return .admin("admin token file \(path): \(why)")
        }
    }
}
