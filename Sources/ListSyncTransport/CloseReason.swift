/// Why a connection closed: what `TransportError/handshake(_:)` carries when it closed in its
/// handshake, so callers match a case (`.authenticationFailed`, `.peerClosed`), never a text.
public enum CloseReason: Hashable, Sendable, CustomStringConvertible {
    /// The peer's first frame was not a HELLO of this protocol: closed without a word.
    case badMagic
    /// A length field over the cap for the connection's state.
    case frameTooLarge(length: Int, limit: Int)
    /// A frame the protocol does not allow here.
    case unexpectedMessage(String)
    /// A frame that does not parse.
    case malformed(String)
    /// No protocol version in common; the peer's range.
    case versionMismatch(peer: ClosedRange<UInt16>)
    /// The peer does not hold the key (or we do not hold its key).
    case authenticationFailed
    /// The peer refused the handshake with an ERROR frame.
    case refusedByPeer(code: UInt8, String)
    /// A sealed frame failed authentication: altered, replayed, reordered or under another key.
    case decryptionFailed
    /// The peer said goodbye, with its reason.
    case bye(String)
    /// This side closed it, for the reason given (idle, slow consumer, handshake deadline, shutdown).
    case local(String)
    /// The peer closed the connection.
    case peerClosed
    /// A socket call failed.
    case system(call: String, errno: Int32)

    public var description: String {
        switch self {
        case .badMagic: return "the peer does not speak this protocol"
        case let .frameTooLarge(length, limit): return "frame of \(length) bytes is over the limit of \(limit)"
        case let .unexpectedMessage(what): return "unexpected message: \(what)"
        case let .malformed(what): return "malformed: \(what)"
        case let .versionMismatch(peer): return "no common protocol version (peer speaks \(peer.lowerBound)...\(peer.upperBound))"
        case .authenticationFailed: return "authentication failed (wrong key?)"
        case let .refusedByPeer(code, text): return "refused by the peer (code \(code)): \(text)"
        case .decryptionFailed: return "a frame failed authentication"
        case let .bye(reason): return "the peer closed: \(reason)"
        case let .local(reason): return reason
        case .peerClosed: return "the peer closed the connection"
        case let .system(call, errno): return "\(call) failed with errno \(errno)"
        }
    }
}
