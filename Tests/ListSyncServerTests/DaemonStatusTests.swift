import Foundation
import Testing
import ListSyncTCP
@testable import ListSyncServer

/// `listsync status` and `/metrics` render one `DaemonStatus`: the same counters, refusals and
/// handshake gauges in both, without a daemon or a socket.
@Suite struct DaemonStatusTests {
    static func status() -> DaemonStatus {
        var c = DaemonMetrics.Counters()
        c.connectionsTotal = 17
        c.connectionsOpen = 3
        c.documentsOnDisk = 9
        c.documentsResident = 4
        c.operationsIn = 1_234
        c.devicesRefused = 2
        c.diskBytes = 4_096
        var h = HandshakeGauges()
        h.inHandshake = 5
        h.evicted = 6
        return DaemonStatus(counters: c, refused: ["bad magic": 7], handshakes: h, handshakePool: 64, residentBytes: 8_192)
    }

    @Test("the JSON and the Prometheus text carry the same values; without its detail the JSON walks nothing")
    func bothRenderingsAgree() throws {
        let s = Self.status()
        let json = try #require(try JSONSerialization.jsonObject(with: Data(s.json().utf8)) as? [String: Any])
        let text = s.prometheus()
        #expect(json["connections_total"] as? Int == 17 && text.contains("listsync_connections_total 17\n"))
        #expect(json["documents_on_disk"] as? Int == 9 && text.contains("listsync_documents_on_disk 9\n"))
        #expect(json["documents_resident"] as? Int == 4 && text.contains("listsync_documents_resident 4\n"))
        #expect(json["operations_in"] as? Int == 1_234 && text.contains("listsync_operations_in_total 1234\n"))
        #expect(json["bytes_on_disk"] as? Int == 4_096 && text.contains("listsync_disk_bytes 4096\n"))
        #expect(json["rss_bytes"] as? Int == 8_192 && text.contains("listsync_resident_bytes 8192\n"))
        #expect((json["refused_connections"] as? [String: Int]) == ["bad magic": 7])
        #expect(text.contains("listsync_refused_connections_total{reason=\"bad magic\"} 7\n"))
        let handshakes = try #require(json["handshakes"] as? [String: Int])
        #expect(handshakes["in_progress"] == 5 && text.contains("listsync_handshakes_in_progress 5\n"))
        #expect(handshakes["evicted"] == 6 && handshakes["pool"] == 64 && text.contains("listsync_handshakes_evicted_total 6\n"))
        #expect(json["resident"] == nil && json["devices"] == nil && json["limits"] == nil)
    }
}
