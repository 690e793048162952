#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension System {
    /// Whether something listens on `host:port` already: binds a socket there as
    /// ``listeningSocket(host:port:backlog:)`` does (`SO_REUSEADDR`), without listening, and
    /// closes it. Port 0, a name that does not resolve, or any other failure is not "in use": the
    /// listener's own start reports those. (`listsync serve` asks before it creates anything.)
    package static func addressInUse(host: String, port: UInt16) -> Bool {
        guard port != 0, let address = try? SocketAddress.resolve(host: host, port: port).first,
              let fd = try? socket(family: address.family) else { return false }
        defer { close(fd) }
        do {
            try setReuseAddress(fd)
            try bind(fd, address)
            return false
        } catch {
            if case let .system(_, code) = error { return code == EADDRINUSE }
            return false
        }
    }
}
