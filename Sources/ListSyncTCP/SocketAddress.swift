#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ListSyncTransport

/// An IPv4 or IPv6 address and port.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address family and bytes.
    public enum Host: Hashable, Sendable {
        /// Four bytes.
        case ipv4(UInt8, UInt8, UInt8, UInt8)
        /// Sixteen bytes.
        case ipv6([UInt8])
    }

    /// The host part.
    public let host: Host
    /// The port.
    public let port: UInt16

    /// An address from its parts.
    public init(host: Host, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses a numeric IPv4 (`127.0.0.1`) or IPv6 (`::1`, with or without brackets) address;
    /// `nil` if `text` is neither.
    public init?(numeric text: String, port: UInt16) {
        var t = Substring(text)
        if t.hasPrefix("["), t.hasSuffix("]") { t = t.dropFirst().dropLast() }
        var v4 = in_addr()
        if inet_pton(AF_INET, String(t), &v4) == 1 {
            let b = withUnsafeBytes(of: &v4) { Array($0) }
            self.init(host: .ipv4(b[0], b[1], b[2], b[3]), port: port)
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, String(t), &v6) == 1 {
            self.init(host: .ipv6(withUnsafeBytes(of: &v6) { Array($0) }), port: port)
            return
        }
        return nil
    }

    /// Resolves `host` (a numeric address or a name such as `localhost`) for TCP.
    ///
    /// - Throws: ``TransportError/system(call:errno:)`` naming `getaddrinfo` when the name does
    ///   not resolve. A name lookup may block; numeric addresses never do.
    public static func resolve(host: String, port: UInt16) throws(TransportError) -> [SocketAddress] {
        if let numeric = SocketAddress(numeric: host, port: port) { return [numeric] }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else { throw .system(call: "getaddrinfo(\(host))", errno: rc) }
        defer { freeaddrinfo(first) }
        var result: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let node = cursor {
            if let sa = node.pointee.ai_addr {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { dst in
                    dst.copyMemory(from: UnsafeRawBufferPointer(start: sa, count: Int(node.pointee.ai_addrlen)))
                }
                let address = SocketAddress(storage: storage)
                if !result.contains(address) { result.append(address) }
            }
            cursor = node.pointee.ai_next
        }
        return result
    }

    /// The address family constant.
    package var family: Int32 {
        switch host {
        case .ipv4: return AF_INET
        case .ipv6: return AF_INET6
        }
    }

    /// `127.0.0.1:7700` or `[::1]:7700`.
    public var description: String {
        switch host {
        case let .ipv4(a, b, c, d): return "\(a).\(b).\(c).\(d):\(port)"
        case let .ipv6(bytes):
            var groups: [String] = []
            for i in stride(from: 0, to: 16, by: 2) {
                groups.append(String(UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]), radix: 16))
            }
            return "[\(groups.joined(separator: ":"))]:\(port)"
        }
    }

    /// The host without the port: the key for per-address limits.
    public var hostKey: Host { host }

    /// The host as text, without the port or brackets: `127.0.0.1`, `::1`.
    public var hostText: String {
        switch host {
        case let .ipv4(a, b, c, d): return "\(a).\(b).\(c).\(d)"
        case .ipv6: return String(description.dropFirst().prefix { $0 != "]" })
        }
    }

    /// Whether the host is a loopback address: 127.0.0.0/8, `::1`, or `::ffff:127.x.y.z`.
    public var isLoopback: Bool {
        switch host {
        case let .ipv4(a, _, _, _): return a == 127
        case let .ipv6(b):
            guard b.count == 16 else { return false }
            if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return true }
            return b[0..<10].allSatisfy { $0 == 0 } && b[10] == 0xff && b[11] == 0xff && b[12] == 127
        }
    }

    /// Whether the host is the unspecified address (`0.0.0.0` or `::`): every interface.
    public var isUnspecified: Bool {
        switch host {
        case let .ipv4(a, b, c, d): return a == 0 && b == 0 && c == 0 && d == 0
        case let .ipv6(bytes): return bytes.allSatisfy { $0 == 0 }
        }
    }

    init(storage: sockaddr_storage) {
        var s = storage
        if Int32(s.ss_family) == AF_INET6 {
            let (bytes, port) = withUnsafePointer(to: &s) { p in
                p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a -> ([UInt8], UInt16) in
                    var addr = a.pointee.sin6_addr
                    return (withUnsafeBytes(of: &addr) { Array($0) }, UInt16(bigEndian: a.pointee.sin6_port))
                }
            }
            self.init(host: .ipv6(bytes), port: port)
        } else {
            let (bytes, port) = withUnsafePointer(to: &s) { p in
                p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a -> ([UInt8], UInt16) in
                    var addr = a.pointee.sin_addr
                    return (withUnsafeBytes(of: &addr) { Array($0) }, UInt16(bigEndian: a.pointee.sin_port))
                }
            }
            self.init(host: .ipv4(bytes[0], bytes[1], bytes[2], bytes[3]), port: port)
        }
    }

    /// Calls `body` with this address as a `sockaddr` and its length.
    func withSockAddr<R, E: Error>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(E) -> R) throws(E) -> R {
        var storage = sockaddr_storage()
        let len: socklen_t
        switch host {
        case let .ipv4(a, b, c, d):
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &sin.sin_addr) { $0.copyBytes(from: [a, b, c, d]) }
            withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: &sin) { dst.copyMemory(from: $0) } }
            len = socklen_t(MemoryLayout<sockaddr_in>.size)
        case let .ipv6(bytes):
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sin6.sin6_addr) { $0.copyBytes(from: bytes) }
            withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: &sin6) { dst.copyMemory(from: $0) } }
            len = socklen_t(MemoryLayout<sockaddr_in6>.size)
        }
        return try withUnsafePointer(to: &storage) { p throws(E) in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(E) in try body(sa, len) }
        }
    }
}
