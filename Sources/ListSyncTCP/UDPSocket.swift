import ListSyncTransport

/// A bound UDP socket on an ``EventLoop``: datagrams in through a callback, out with
/// ``send(_:to:)``. Used for LAN discovery (small, authenticated announcements); nothing here
/// is reliable or ordered.
public final class UDPSocket: @unchecked Sendable {
    // @unchecked Sendable: `fd` is immutable; `handler` and the registration are touched on the
    // loop's thread only.

    /// The bound address (with the port chosen, when 0 was asked).
    public let address: SocketAddress
    private let fd: Int32
    private let loop: EventLoop
    private var reader: Reader?

    // @unchecked Sendable: created off the loop, then used on the loop's thread only.
    private final class Reader: EventHandler, @unchecked Sendable {
        let fd: Int32
        let onDatagram: @Sendable ([UInt8], SocketAddress) -> Void
        init(fd: Int32, onDatagram: @escaping @Sendable ([UInt8], SocketAddress) -> Void) {
            self.fd = fd
            self.onDatagram = onDatagram
        }
        func readable() {
            while let (bytes, from) = (try? System.receiveFrom(fd, max: 2048)) ?? nil { onDatagram(bytes, from) }
        }
        func writable() {}
    }

    /// Binds `host:port` (SO_REUSEADDR and SO_REUSEPORT, so that daemons on one host share the
    /// discovery port; broadcast sending allowed) and calls `onDatagram` on the loop's thread for
    /// each datagram received (at most 2 KiB; longer ones are cut).
    public static func bind(host: String, port: UInt16, loop: EventLoop = .shared,
                            onDatagram: @escaping @Sendable ([UInt8], SocketAddress) -> Void) async throws(TransportError) -> UDPSocket {
        guard let address = try SocketAddress.resolve(host: host, port: port).first else {
            throw .system(call: "getaddrinfo(\(host))", errno: 0)
        }
        let fd = try System.datagramSocket(family: address.family)
        let bound: SocketAddress
        do {
            try System.setReuseAddress(fd)
            try System.setReusePort(fd)
            try System.setBroadcast(fd)
            try System.bind(fd, address)
            bound = try System.localAddress(fd)
        } catch {
            System.close(fd)
            throw error
        }
        let socket = UDPSocket(fd: fd, address: bound, loop: loop)
        let reader = Reader(fd: fd, onDatagram: onDatagram)
        let failure: TransportError? = await withCheckedContinuation { c in
            loop.execute {
                do throws(TransportError) {
                    try loop.register(fd, reader, writable: false)
                    socket.reader = reader
                    c.resume(returning: nil)
                } catch {
                    c.resume(returning: error)
                }
            }
        }
        if let failure {
            System.close(fd)
            throw failure
        }
        return socket
    }

    private init(fd: Int32, address: SocketAddress, loop: EventLoop) {
        self.fd = fd
        self.address = address
        self.loop = loop
    }

    /// Sends one datagram to `to` (dropped, as UDP may, if the socket's buffer is full).
    public func send(_ bytes: [UInt8], to: SocketAddress) {
        let fd = fd
        loop.execute { _ = try? System.sendTo(fd, bytes, to) }
    }

    /// Closes the socket; returns once it is closed.
    public func close() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            loop.execute { [self] in
                if reader != nil {
                    loop.deregister(fd)
                    System.close(fd)
                    reader = nil
                }
                c.resume()
            }
        }
    }
}
