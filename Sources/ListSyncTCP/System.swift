#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ListSyncTransport

/// The one place where this module calls the operating system.
///
/// Every socket, poller and descriptor call goes through ``call(_:_:)``: it retries on `EINTR`
/// and turns a failure into ``TransportError/system(call:errno:)`` naming the call, in the manner
/// of swift-nio's `System.swift`. `EAGAIN`/`EWOULDBLOCK` are not errors on non-blocking
/// descriptors; the wrappers that can meet them return `nil` instead.
package enum System {
    /// Runs `body` until it does not fail with `EINTR`; a result of -1 throws with the call's name.
    @inline(__always)
    package static func call<T: BinaryInteger>(_ name: StaticString, _ body: () -> T) throws(TransportError) -> T {
        while true {
            let r = body()
            if r != -1 { return r }
            let e = errno
            if e == EINTR { continue }
            throw .system(call: "\(name)", errno: e)
        }
    }

    /// As ``call(_:_:)`` but `EAGAIN`/`EWOULDBLOCK` (and `EINPROGRESS` for connect) give `nil`.
    @inline(__always)
    package static func callNonBlocking<T: BinaryInteger>(_ name: StaticString, _ body: () -> T) throws(TransportError) -> T? {
        while true {
            let r = body()
            if r != -1 { return r }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK || e == EINPROGRESS { return nil }
            throw .system(call: "\(name)", errno: e)
        }
    }

    /// For the pollers' waits (`epoll_wait`, `poll`, `kevent`): as ``call(_:_:)`` but `EINTR` returns
    /// 0 (nothing ready) instead of waiting again with the same timeout, so that the event loop
    /// recomputes the timeout from its timers (a signal every few milliseconds would otherwise
    /// postpone a due timer for ever).
    @inline(__always)
    package static func waitCall<T: BinaryInteger>(_ name: StaticString, _ body: () -> T) throws(TransportError) -> T {
        let r = body()
        if r != -1 { return r }
        let e = errno
        if e == EINTR { return 0 }
        throw .system(call: "\(name)", errno: e)
    }

    // MARK: Descriptors

    /// Closes `fd`; errors are ignored (the descriptor is gone either way on Linux and Darwin).
    package static func close(_ fd: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #elseif canImport(Darwin)
        _ = Darwin.close(fd)
        #endif
    }

    /// Reads into `buffer`; `0` is end of stream, `nil` would block.
    package static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws(TransportError) -> Int? {
        try callNonBlocking("read") {
            #if canImport(Glibc)
            Glibc.read(fd, buffer.baseAddress, buffer.count)
            #elseif canImport(Darwin)
            Darwin.read(fd, buffer.baseAddress, buffer.count)
            #endif
        }
    }

    /// Writes from `buffer`; `nil` would block.
    package static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(TransportError) -> Int? {
        try callNonBlocking("send") {
            #if canImport(Glibc)
            Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
            #elseif canImport(Darwin)
            Darwin.send(fd, buffer.baseAddress, buffer.count, 0)
            #endif
        }
    }

    /// Writes from `buffer` with write(2), for descriptors that are not sockets (a pipe, an
    /// eventfd; ``write(_:_:)`` uses send(2)); `nil` would block.
    package static func writeDescriptor(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(TransportError) -> Int? {
        try callNonBlocking("write") {
            #if canImport(Glibc)
            Glibc.write(fd, buffer.baseAddress, buffer.count)
            #elseif canImport(Darwin)
            Darwin.write(fd, buffer.baseAddress, buffer.count)
            #endif
        }
    }

    /// A pipe, both ends non-blocking and close-on-exec: pipe(2) then fcntl(2), the same code on
    /// every POSIX system (pipe2 is not on Darwin). Between the two calls a `fork` + `exec` on
    /// another thread could inherit the ends; the child would only hold them open, harmlessly.
    package static func pipe() throws(TransportError) -> (read: Int32, write: Int32) {
        var ends: (Int32, Int32) = (-1, -1)
        _ = try withUnsafeMutablePointer(to: &ends) { p throws(TransportError) in
            try p.withMemoryRebound(to: Int32.self, capacity: 2) { fds throws(TransportError) in
                try call("pipe") {
                    #if canImport(Glibc)
                    Glibc.pipe(fds)
                    #elseif canImport(Darwin)
                    Darwin.pipe(fds)
                    #endif
                }
            }
        }
        do {
            try setNonBlocking(ends.0)
            try setNonBlocking(ends.1)
        } catch {
            close(ends.0)
            close(ends.1)
            throw error
        }
        return ends
    }

    /// Makes `fd` non-blocking and close-on-exec.
    package static func setNonBlocking(_ fd: Int32) throws(TransportError) {
        let flags = try call("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
        _ = try call("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        _ = try call("fcntl(F_SETFD)") { fcntl(fd, F_SETFD, FD_CLOEXEC) }
    }

    // MARK: Sockets

    /// A new TCP socket for `family`, non-blocking and close-on-exec.
    package static func socket(family: Int32) throws(TransportError) -> Int32 {
        #if canImport(Glibc)
        let fd = try call("socket") { Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        #elseif canImport(Darwin)
        let fd = try call("socket") { Darwin.socket(family, SOCK_STREAM, 0) }
        do { try setNonBlocking(fd) } catch { close(fd); throw error }
        #endif
        #if canImport(Darwin)
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        return fd
    }

    /// A new UDP socket for `family`, non-blocking and close-on-exec.
    static func datagramSocket(family: Int32) throws(TransportError) -> Int32 {
        #if canImport(Glibc)
        let fd = try call("socket(SOCK_DGRAM)") { Glibc.socket(family, Int32(SOCK_DGRAM.rawValue), 0) }
        #elseif canImport(Darwin)
        let fd = try call("socket(SOCK_DGRAM)") { Darwin.socket(family, SOCK_DGRAM, 0) }
        #endif
        do { try setNonBlocking(fd) } catch { close(fd); throw error }
        return fd
    }

    /// Allows sending to broadcast addresses.
    static func setBroadcast(_ fd: Int32) throws(TransportError) {
        try setOption(fd, level: SOL_SOCKET, name: SO_BROADCAST, 1, call: "setsockopt(SO_BROADCAST)")
    }

    /// Lets several sockets of this host bind the same UDP port (each gets broadcasts).
    static func setReusePort(_ fd: Int32) throws(TransportError) {
        try setOption(fd, level: SOL_SOCKET, name: SO_REUSEPORT, 1, call: "setsockopt(SO_REUSEPORT)")
    }

    /// Sends one datagram; `false` if it would block (the datagram is dropped).
    static func sendTo(_ fd: Int32, _ bytes: [UInt8], _ address: SocketAddress) throws(TransportError) -> Bool {
        let sent: Int? = try address.withSockAddr { sa, len throws(TransportError) in
            try callNonBlocking("sendto") {
                bytes.withUnsafeBytes { b in
                    #if canImport(Glibc)
                    Glibc.sendto(fd, b.baseAddress, b.count, Int32(MSG_NOSIGNAL), sa, len)
                    #elseif canImport(Darwin)
                    Darwin.sendto(fd, b.baseAddress, b.count, 0, sa, len)
                    #endif
                }
            }
        }
        return sent != nil
    }

    /// Receives one datagram of at most `max` bytes and its sender; `nil` when none is waiting.
    static func receiveFrom(_ fd: Int32, max: Int) throws(TransportError) -> ([UInt8], SocketAddress)? {
        var buffer = [UInt8](repeating: 0, count: max)
        var storage = sockaddr_storage()
        let n: Int? = try callNonBlocking("recvfrom") {
            var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
            return buffer.withUnsafeMutableBytes { b in
                withUnsafeMutablePointer(to: &storage) { p in
                    p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                        #if canImport(Glibc)
                        Glibc.recvfrom(fd, b.baseAddress, b.count, 0, sa, &len)
                        #elseif canImport(Darwin)
                        Darwin.recvfrom(fd, b.baseAddress, b.count, 0, sa, &len)
                        #endif
                    }
                }
            }
        }
        guard let n else { return nil }
        return (Array(buffer[0..<n]), SocketAddress(storage: storage))
    }

    /// Sets an integer socket option.
    package static func setOption(_ fd: Int32, level: Int32, name: Int32, _ value: Int32, call: StaticString) throws(TransportError) {
        var v = value
        _ = try System.call(call) { setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size)) }
    }

    /// Turns off Nagle's algorithm: frames leave at once.
    package static func setNoDelay(_ fd: Int32) throws(TransportError) {
        try setOption(fd, level: Int32(IPPROTO_TCP), name: Int32(TCP_NODELAY), 1, call: "setsockopt(TCP_NODELAY)")
    }

    /// Whether bytes from the peer wait in `fd`'s receive buffer, not read yet (`FIONREAD`); false
    /// if the call fails.
    package static func hasUnreadBytes(_ fd: Int32) -> Bool {
        var count: Int32 = 0
        #if canImport(Glibc)
        let r = ioctl(fd, UInt(FIONREAD), &count)
        #else
        let r = ioctl(fd, FIONREAD, &count)
        #endif
        return r == 0 && count > 0
    }

    /// Lets a listener rebind a port with connections in TIME_WAIT.
    static func setReuseAddress(_ fd: Int32) throws(TransportError) {
        try setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, 1, call: "setsockopt(SO_REUSEADDR)")
    }

    /// Binds `fd` to `address`.
    static func bind(_ fd: Int32, _ address: SocketAddress) throws(TransportError) {
        _ = try address.withSockAddr { sa, len throws(TransportError) in
            try call("bind") {
                #if canImport(Glibc)
                Glibc.bind(fd, sa, len)
                #elseif canImport(Darwin)
                Darwin.bind(fd, sa, len)
                #endif
            }
        }
    }

    /// A listening TCP socket on `host:port` (SO_REUSEADDR, non-blocking): its descriptor and
    /// the address it is bound to (with the port chosen, when 0 was asked).
    package static func listeningSocket(host: String, port: UInt16, backlog: Int32) throws(TransportError) -> (Int32, SocketAddress) {
        guard let address = try SocketAddress.resolve(host: host, port: port).first else {
            throw .system(call: "getaddrinfo(\(host))", errno: 0)
        }
        let fd = try socket(family: address.family)
        do {
            try setReuseAddress(fd)
            try bind(fd, address)
            try listen(fd, backlog: backlog)
            return (fd, try localAddress(fd))
        } catch {
            close(fd)
            throw error
        }
    }

    /// Starts listening on `fd`.
    static func listen(_ fd: Int32, backlog: Int32) throws(TransportError) {
        _ = try call("listen") {
            #if canImport(Glibc)
            Glibc.listen(fd, backlog)
            #elseif canImport(Darwin)
            Darwin.listen(fd, backlog)
            #endif
        }
    }

    /// Accepts one connection: its descriptor (non-blocking, close-on-exec) and address, or `nil`
    /// when none is waiting.
    package static func accept(_ fd: Int32) throws(TransportError) -> (Int32, SocketAddress)? {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let client: Int32? = try withUnsafeMutablePointer(to: &storage) { p throws(TransportError) in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(TransportError) in
                try callNonBlocking("accept") {
                    #if canImport(Glibc)
                    Glibc.accept(fd, sa, &len)
                    #elseif canImport(Darwin)
                    Darwin.accept(fd, sa, &len)
                    #endif
                }
            }
        }
        guard let client else { return nil }
        do { try setNonBlocking(client) } catch { close(client); throw error }
        return (client, SocketAddress(storage: storage))
    }

    /// Starts connecting `fd` to `address`: `true` when connected at once, `false` in progress.
    package static func connect(_ fd: Int32, _ address: SocketAddress) throws(TransportError) -> Bool {
        try address.withSockAddr { sa, len throws(TransportError) in
            try callNonBlocking("connect") {
                #if canImport(Glibc)
                Glibc.connect(fd, sa, len)
                #elseif canImport(Darwin)
                Darwin.connect(fd, sa, len)
                #endif
            } != nil
        }
    }

    /// The pending error of a socket (`SO_ERROR`), 0 if none: how a non-blocking connect ends.
    package static func socketError(_ fd: Int32) throws(TransportError) -> Int32 {
        var value: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        _ = try call("getsockopt(SO_ERROR)") { getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &len) }
        return value
    }

    /// The local address `fd` is bound to.
    package static func localAddress(_ fd: Int32) throws(TransportError) -> SocketAddress {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { p throws(TransportError) in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(TransportError) in
                try call("getsockname") { getsockname(fd, sa, &len) }
            }
        }
        return SocketAddress(storage: storage)
    }

    /// Makes the next `close` of `fd` send a reset (RST, `SO_LINGER` 0) instead of a FIN: the peer's
    /// next read or write fails with `ECONNRESET`, as when a connection is dropped on the way.
    package static func setResetOnClose(_ fd: Int32) {
        var l = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
    }

    /// Shuts down the sending side of `fd` (`shutdown(SHUT_WR)`): the peer reads end of stream
    /// after the bytes already sent, while this side may still read.
    package static func shutdownWrite(_ fd: Int32) throws(TransportError) {
        _ = try call("shutdown") {
            #if canImport(Glibc)
            Glibc.shutdown(fd, Int32(SHUT_WR))
            #elseif canImport(Darwin)
            Darwin.shutdown(fd, SHUT_WR)
            #endif
        }
    }
}
