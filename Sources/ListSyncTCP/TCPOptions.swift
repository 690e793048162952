/// The limits and timings of TCP connections and listeners (Docs/Transport.md, "Limits").
///
/// Every queue, frame and count is bounded; the defaults are in Docs/Transport.md, "Limits".
public struct TCPOptions: Sendable {
    /// The largest frame body before the handshake ends.
    public var handshakeFrameLimit = 2048
    /// The largest frame body after it (the largest payload is 17 bytes less).
    public var frameLimit = 1 << 20
    /// Time allowed from accept (or connect) to the end of the handshake.
    public var handshakeTimeout: Duration = .seconds(3)
    /// A connection that receives nothing for this long is closed. Time this process did not run
    /// (a timer turn more than ``pingInterval`` late: a suspended or starved machine) is not counted.
    public var idleTimeout: Duration = .seconds(60)
    /// A connection that receives nothing for this long sends a PING.
    public var pingInterval: Duration = .seconds(20)
    /// Bytes queued for a peer that does not read; over it the connection closes ("slow consumer").
    public var sendQueueLimit = 8 << 20
    /// How long a server waits before it answers a failed key proof.
    public var authenticationFailureDelay: Duration = .seconds(1)
    /// Connections a listener holds at once, authenticated or not.
    public var maxConnections = 1024
    /// Connections still in their handshake (the pool): when it is full a new connection evicts
    /// one of them rather than being refused (``TCPListener``).
    public var maxUnauthenticated = 128
    /// Authenticated connections from one address (a key holder's bug, not an attack: strangers
    /// never count against it).
    public var maxPerAddress = 256

    /// The defaults.
    public init() {}

    /// The largest payload (one message) a connection with these options carries:
    /// ``frameLimit`` less the type byte and the 16-byte tag of a sealed frame
    /// (``TCPTransport/maxFrame`` of an established connection).
    public var maxPayload: Int { frameLimit - ConnectionMachine.overhead }
}
