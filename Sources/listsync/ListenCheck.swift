import Foundation
import ListSyncTCP

/// Why `serve` could not start before it touched anything (exit 1, no folder made).
struct StartProblem: Error, CustomStringConvertible {
    var description: String
}

/// Checks, before `serve` creates its data folder or its key, that nothing listens on
/// `host:port` already (``System/addressInUse(host:port:)``). The check is a courtesy: a program
/// that takes the port between the check and the start is still reported by the start.
///
/// - Throws: ``StartProblem`` when the address is in use.
func checkListenAddressFree(host: String, port: UInt16, flag: String) throws {
    guard System.addressInUse(host: host, port: port) else { return }
    throw StartProblem(description: "\(host):\(port) is already in use: another daemon or program listens there; "
        + "stop it, or choose another port with \(flag) HOST:PORT (nothing was created)")
}
