import ListSyncTCP
import ListSyncTestTraits

/// Options for a test's raw client connection (`TCPTransport.connect`): a handshake deadline as
/// long as the liveness guard. The transport's default, 3 s, is the listener's guard against
/// strangers; on a loaded machine an honest client's own 3 s ran out with the daemon well (a CI
/// run beside builds), and the verdict must not depend on the load.
let patientClientOptions: TCPOptions = {
    var o = TCPOptions()
    o.handshakeTimeout = .seconds(Int64(livenessGuardSeconds))
    return o
}()
