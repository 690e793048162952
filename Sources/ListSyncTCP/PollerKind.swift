#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ListSyncTransport

/// The readiness interface an ``EventLoop`` waits with (see `Docs/Transport.md`, "Pollers").
///
/// Chosen when a loop starts: the system's best (``platformDefault``: epoll on Linux, kqueue on
/// Darwin and the BSDs, poll elsewhere) unless the environment variable `LISTSYNC_POLLER` names
/// another of ``available``, as `LISTSYNC_POLLER=poll` does to run everything on the portable one.
public enum PollerKind: String, CaseIterable, Hashable, Sendable, CustomStringConvertible {
    /// epoll(7): Linux.
    case epoll
    /// kqueue(2): macOS, iOS and the other Apple systems, FreeBSD, OpenBSD.
    case kqueue
    /// poll(2): any POSIX system; O(registered descriptors) for each wait.
    case poll

    /// The environment variable that forces a poller: `LISTSYNC_POLLER`.
    public static let environmentVariable = "LISTSYNC_POLLER"

    /// The pollers this system has, the default first.
    public static var available: [PollerKind] {
        #if os(Linux)
        return [.epoll, .poll]
        #elseif canImport(Darwin) || os(FreeBSD) || os(OpenBSD)
        return [.kqueue, .poll]
        #else
        return [.poll]
        #endif
    }

    /// The poller a loop uses when `LISTSYNC_POLLER` is not set.
    public static var platformDefault: PollerKind { available[0] }

    /// Whether this system has this poller.
    public var isAvailable: Bool { Self.available.contains(self) }

    public var description: String { rawValue }

    /// The poller `value` names (`LISTSYNC_POLLER`'s value): ``platformDefault`` for `nil` or an
    /// empty value; case and surrounding spaces do not matter.
    ///
    /// - Throws: ``EventLoopError/unknownPoller(_:available:)`` for a name that is no poller,
    ///   ``EventLoopError/unavailablePoller(_:available:)`` for one this system lacks.
    public static func named(_ value: String?) throws(EventLoopError) -> PollerKind {
        let name = (value ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        if name.isEmpty { return platformDefault }
        guard let kind = PollerKind(rawValue: name) else { throw .unknownPoller(value ?? "", available: available) }
        guard kind.isAvailable else { throw .unavailablePoller(kind, available: available) }
        return kind
    }

    /// The poller `LISTSYNC_POLLER` names in this process's environment (``named(_:)``).
    ///
    /// - Throws: as ``named(_:)``.
    public static func fromEnvironment() throws(EventLoopError) -> PollerKind {
        try named(getenv(environmentVariable).map { String(cString: $0) })
    }
}

/// Why an ``EventLoop`` could not start.
public enum EventLoopError: Error, Hashable, Sendable, CustomStringConvertible {
    /// `LISTSYNC_POLLER` holds a name that is no poller.
    case unknownPoller(String, available: [PollerKind])
    /// The poller asked for (by `LISTSYNC_POLLER` or ``EventLoop/init(poller:)``) does not exist
    /// on this system.
    case unavailablePoller(PollerKind, available: [PollerKind])
    /// The poller could not be created (`epoll_create1`, `kqueue`, `eventfd` or `pipe` failed:
    /// out of descriptors, for one).
    case system(TransportError)

    public var description: String {
        switch self {
        case let .unknownPoller(name, available):
            return "\(PollerKind.environmentVariable)=\(name) names no poller; the choices here are "
                + Self.choices(available)
        case let .unavailablePoller(kind, available):
            return "the \(kind) poller is not available on this system; the choices here are " + Self.choices(available)
        case let .system(error):
            return "cannot create the poller: \(error)"
        }
    }

    private static func choices(_ available: [PollerKind]) -> String {
        available.map(\.rawValue).joined(separator: ", ")
            + " (set \(PollerKind.environmentVariable) to one, or unset it for \(available.first?.rawValue ?? "the default"))"
    }
}
