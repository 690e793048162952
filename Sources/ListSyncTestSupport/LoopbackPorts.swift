import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Ports for test servers that are stopped and started again on the same port (a daemon killed
/// and restarted, a NATS server restarted, chromedriver told its port).
///
/// A port the kernel picks (`bind` to port 0) comes from the ephemeral range, which the kernel also
/// hands to every outgoing connection's local end. Between a server's stop and its restart, any
/// test's client connection may get that very port, and the restart then fails with "already in
/// use": a CI run failed that way (`EpochTests`, stop 60). So these ports come from below the
/// ephemeral range, where the kernel never allocates, each one checked free (TCP and UDP) on the
/// host when it is handed out, and never handed out twice by one test process (a counter, from a
/// start drawn per process so that two test runs side by side rarely meet).
public enum LoopbackPorts {
    /// Where handed-out ports come from: `low..<high`, below the ephemeral range.
    public static let range: Range<UInt16> = {
        let low: UInt16 = 20_000
        // Linux: "32768\t60999"; elsewhere (macOS: 49152 and up) 32768 is below it too.
        var high: UInt16 = 32_768
        if let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8),
           let first = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first,
           let ephemeralLow = UInt16(first), ephemeralLow > low + 1_000 {
            high = min(high, ephemeralLow)
        }
        return low..<high
    }()

    private static let next = Mutex<UInt32>(UInt32(getpid()) &* 2_654_435_761 >> 8)

    /// A port in ``range`` free on `host` now, for TCP and UDP, that this process has not handed
    /// out before. Throws after trying every port of the range once.
    public static func restartable(host: String = "127.0.0.1") throws -> UInt16 {
        let count = UInt32(range.count)
        for _ in 0..<count {
            let candidate = next.withLock { value -> UInt16 in
                value &+= 1
                return range.lowerBound + UInt16(value % count)
            }
            if isFree(candidate, host: host, udp: false) && isFree(candidate, host: host, udp: true) {
                return candidate
            }
        }
        throw LoopbackPortsError(text: "no free port in \(range) on \(host)")
    }

    /// Whether `port` can be bound on `host` now, for UDP or TCP (bound, then closed at once).
    public static func isFree(_ port: UInt16, host: String, udp: Bool) -> Bool {
        #if canImport(Glibc)
        let type = Int32(udp ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue)
        #else
        let type = udp ? SOCK_DGRAM : SOCK_STREAM
        #endif
        let fd = socket(AF_INET, type, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else { return false }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// No free port could be found.
public struct LoopbackPortsError: Error, CustomStringConvertible {
    public let text: String
    public var description: String { text }
}
