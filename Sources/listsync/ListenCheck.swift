import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why `serve` could not start before it touched anything (exit 1, no folder made).
struct StartProblem: Error, CustomStringConvertible {
    var description: String
}

/// Checks, before `serve` creates its data folder or its key, that nothing listens on
/// `host:port` already: binds a socket there (with `SO_REUSEADDR`, as the daemon's listener does)
/// and closes it. Port 0 (any free port) and a name that does not resolve are left to the
/// daemon's own start, which reports them. The check is a courtesy: a program that takes the port
/// between the check and the start is still reported by the start.
///
/// - Throws: ``StartProblem`` when the address is in use.
func checkListenAddressFree(host: String, port: UInt16, flag: String) throws {
    guard port != 0 else { return }
    var hints = addrinfo()
    hints.ai_flags = AI_NUMERICSERV
    #if canImport(Glibc)
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    #else
    hints.ai_socktype = SOCK_STREAM
    #endif
    var list: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return }
    defer { freeaddrinfo(list) }
    let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
    guard fd >= 0 else { return }
    defer { close(fd) }
    var one: Int32 = 1
    _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    if bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0, errno == EADDRINUSE {
        throw StartProblem(description: "\(host):\(port) is already in use: another daemon or program listens there; "
            + "stop it, or choose another port with \(flag) HOST:PORT (nothing was created)")
    }
}
