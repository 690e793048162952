#if canImport(Glibc)
import Glibc
import Foundation
import ListSyncTCP
@testable import ListSyncServer
import ListSyncFiles
import ListSyncTestTraits
import Testing

/// Datagrams a daemon must not act on, sent over real UDP on 127.0.0.0/8 to a daemon process
/// (Docs/Security.md, "Discovery"). Each test watches where the daemon dials with listening
/// sockets of its own, and reads the daemon's counts of what became of each announcement.
@Suite("Discovery attacks", .ownThread, .serialized, .hangGuard)
struct DiscoveryAttackTests {
    /// A daemon with discovery on a free UDP port, announcing every 0.3 s to `announceTo` (by
    /// default a port nobody reads; 0: its own), with its key and a sender from a 127.x address.
    struct Scene {
        let dir = TemporaryFolder()
        let daemon: DaemonProcess
        let udp: UInt16
        let key: [UInt8]
        let sender: UDPSender

        init(_ name: String, announceTo: UInt16? = nil, from source: String = "127.0.0.6") throws {
            let udp = try DiscoveryTests.freeUDPPort()
            self.udp = udp
            let target = try announceTo.map { $0 == 0 ? udp : $0 } ?? DiscoveryTests.freeUDPPort()
            daemon = try DaemonProcess(data: dir.path + "/" + name, extra: ["--discover", "--discover-port", "\(udp)",
                                                                             "--announce-interval", "0.3", "--announce-to", "127.0.0.1:\(target)"])
            key = try KeyFile.read(daemon.keyFile)
            guard let sender = UDPSender(from: source) else { throw DaemonTestError("no UDP socket on \(source)") }
            self.sender = sender
        }

        /// Sends `a`, sealed with the daemon's key (or `key`).
        func send(_ a: DiscoveryAnnouncement, key other: [UInt8]? = nil) { sender.send(a.encoded(key: other ?? key), to: udp) }

        func stop() {
            daemon.terminate()
            dir.remove()
        }
    }

    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    /// What became of the announcements the daemon heard (`status --json`, "discovery").
    static func verdicts(_ d: DaemonProcess) -> [String: Int] {
        ((try? d.json(["status"]) as? [String: Any])?["discovery"] as? [String: Int]) ?? [:]
    }

    static func peers(_ d: DaemonProcess) -> [String] {
        (((try? d.json(["status"]) as? [String: Any])?["peers"] as? [[String: Any]]) ?? []).compactMap { $0["address"] as? String }
    }

    @Test("a replayed datagram, from another source, is ignored; the daemon dials the announced address, never the sender's")
    func replay() throws {
        let scene = try Scene("a", from: "127.0.0.7")
        defer { scene.stop() }
        let (d, udp) = (scene.daemon, scene.udp)
        let honest = try #require(TCPWatch("127.0.0.1"))
        let decoy = try #require(TCPWatch("127.0.0.7", port: honest.port))
        let a = DiscoveryAnnouncement(instance: .max, node: 77, address: SocketAddress(numeric: "127.0.0.1", port: honest.port)!, time: Self.now())
        let datagram = a.encoded(key: scene.key)
        scene.send(a)
        #expect(honest.waitForConnection(seconds: livenessGuardSeconds), "the announced address is dialled: \(d.log)")
        #expect(Self.peers(d) == ["127.0.0.1:\(honest.port)"])
        try #require(UDPSender(from: "127.0.0.8")).send(datagram, to: udp)
        try #require(UDPSender(from: "127.0.0.7")).send(datagram, to: udp)
        #expect(eventually(10) { Self.verdicts(d)["replayed"] == 2 }, "\(Self.verdicts(d))")
        #expect(Self.verdicts(d)["accepted"] == 1)
        // The replays add no peer. (The honest one, which never answers, may be dropped by now as
        // silent once its dials fail, on a loaded machine: only that it is the one, if any, counts.)
        #expect(Self.peers(d).allSatisfy { $0 == "127.0.0.1:\(honest.port)" }, "\(Self.peers(d))")
        #expect(!decoy.waitForConnection(seconds: 0.5), "the sender's address is never dialled")
    }

    @Test("its own announcements, an earlier run's (same node) and one naming its own address: never a peer of itself")
    func own() throws {
        let scene = try Scene("self", announceTo: 0)   // announces to its own port
        defer { scene.stop() }
        let d = scene.daemon
        // `replica <16 hex digits>` (Docs/Daemon.md, "Files").
        let node = try #require(UInt64(String(contentsOfFile: d.data + "/replica", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ").last ?? "", radix: 16))
        let target = try #require(TCPWatch("127.0.0.1"))
        let earlierRun = DiscoveryAnnouncement(instance: .max, node: node, address: SocketAddress(numeric: "127.0.0.1", port: target.port)!, time: Self.now())
        let ownAddress = DiscoveryAnnouncement(instance: .max - 1, node: 555, address: SocketAddress(numeric: "127.0.0.1", port: d.port)!, time: Self.now())
        scene.send(earlierRun)
        scene.send(ownAddress)
        #expect(eventually(10) { (Self.verdicts(d)["own"] ?? 0) >= 5 }, "\(Self.verdicts(d))")
        #expect(Self.verdicts(d)["accepted"] == nil)
        #expect(Self.peers(d).isEmpty)
        #expect(!d.log.contains("peer discovered"))
        #expect(!target.waitForConnection(seconds: 0.3))
    }

    @Test("stale and future times, a MAC over another address or port, another key: ignored; the genuine datagram is not")
    func forgeries() throws {
        let scene = try Scene("f")
        defer { scene.stop() }
        let (d, udp, sender) = (scene.daemon, scene.udp, scene.sender)
        let honest = try #require(TCPWatch("127.0.0.1"))
        let forgedTarget = try #require(TCPWatch("127.0.0.9", port: honest.port))
        let address = SocketAddress(numeric: "127.0.0.1", port: honest.port)!
        scene.send(DiscoveryAnnouncement(instance: .max, node: 9, address: address, time: Self.now() - 45_000))
        scene.send(DiscoveryAnnouncement(instance: .max, node: 9, address: address, time: Self.now() + 45_000))
        let genuine = DiscoveryAnnouncement(instance: .max, node: 9, address: address, time: Self.now()).encoded(key: scene.key)
        var otherHost = genuine
        otherHost[25] = 9                            // 127.0.0.9, the MAC over 127.0.0.1
        var otherPort = genuine
        otherPort[27] ^= 1
        sender.send(otherHost, to: udp)
        sender.send(otherPort, to: udp)
        scene.send(DiscoveryAnnouncement(instance: .max, node: 9, address: address, time: Self.now()), key: Array(repeating: 1, count: 32))
        #expect(eventually(10) { Self.verdicts(d) == ["stale": 2, "invalid": 3] }, "\(Self.verdicts(d))")
        #expect(Self.peers(d).isEmpty)
        sender.send(genuine, to: udp)
        #expect(honest.waitForConnection(seconds: livenessGuardSeconds))
        #expect(Self.verdicts(d)["accepted"] == 1)
        #expect(!forgedTarget.waitForConnection(seconds: 0.3))
    }

    @Test("a discovered peer that falls silent and cannot be reached is dropped")
    func deadPeer() throws {
        let scene = try Scene("dead")
        defer { scene.stop() }
        let d = scene.daemon
        let closed = try #require(TCPWatch("127.0.0.1"))
        let port = closed.port
        closed.close()                               // nothing listens there any more
        let a = DiscoveryAnnouncement(instance: .max, node: 9, address: SocketAddress(numeric: "127.0.0.1", port: port)!, time: Self.now())
        scene.send(a)
        #expect(eventually(10) { d.log.contains("peer discovered address=127.0.0.1:\(port)") }, "\(d.log)")
        let found = ContinuousClock.now
        #expect(eventually(15) { d.log.contains("peer dropped address=127.0.0.1:\(port)") }, "\(d.log)")
        print("dead peer: dropped \(ContinuousClock.now - found) after it was discovered (interval 0.3 s)")
        #expect(Self.peers(d).isEmpty)
    }
}

/// A UDP socket bound to a 127.x source address, sending datagrams to 127.0.0.1.
final class UDPSender {
    /// -1 once closed: a failed init closes it itself, and deinit (which runs after a failed init
    /// of a fully initialized object) must not close that number again.
    private(set) var fd: Int32
    init?(from source: String) {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &a.sin_addr)
        let ok = withUnsafePointer(to: &a) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
        if !ok { Glibc.close(fd); fd = -1; return nil }
    }
    deinit { if fd >= 0 { Glibc.close(fd) } }

    func send(_ bytes: [UInt8], to port: UInt16) {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr)
        _ = withUnsafePointer(to: &a) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
}

/// A listening TCP socket on a 127.x address that notes whether anyone connects.
final class TCPWatch {
    private(set) var fd: Int32
    let port: UInt16
    init?(_ host: String, port: UInt16 = 0) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &a.sin_addr)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = fd
        let ok = withUnsafeMutablePointer(to: &a) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard ok else { Glibc.close(fd); return nil }
        self.port = UInt16(bigEndian: a.sin_port)
    }
    deinit { close() }

    /// Whether a connection arrives within `seconds` (it is accepted and closed).
    func waitForConnection(seconds: Double) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard fd >= 0, poll(&p, 1, Int32(seconds * 1000)) > 0 else { return false }
        let c = accept(fd, nil, nil)
        if c >= 0 { Glibc.close(c) }
        return c >= 0
    }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }
}
#endif
