import Foundation
import ListSyncTestSupport
import Testing
import ListCRDT
import ListStore

/// Replays the `store` libFuzzer corpus and kept crashes of Tests/Fuzz (Docs/Fuzzing.md), read as
/// Tests/Fuzz/Harnesses/store.swift reads them (mode byte, then a log tail, framed records, a
/// whole file, or a snapshot payload).
@Suite("Fuzz corpus replay: log records and snapshot files")
struct FuzzCorpusReplayTests {
    static let document = DocumentID(high: 0x1111_2222_3333_4444, low: 0x5555_6666_7777_8888)

    @Test("LogScan.scan, LogFormat.readSnapshotFile, ListDocument(snapshot:)")
    func logsAndSnapshots() throws {
        let count = try replayFuzzCorpus("store") { input in
            guard !input.isAtEnd else { return }
            switch input.byte() % 4 {
            case 0:
                _ = try? LogScan.scan(LogFormat.logHeader(Self.document) + input.rest(), document: Self.document)
            case 1:
                var log = LogFormat.logHeader(Self.document)
                while !input.isAtEnd {
                    let type = input.byte()
                    if type == 0xff { log += input.rest(); break }
                    let payload = input.take(input.u16())
                    Self.appendRecord(type: type, payload: payload, to: &log)
                }
                _ = try? LogScan.scan(log, document: Self.document)
            case 2:
                let body = input.rest()
                _ = try? LogScan.scan(body, document: Self.document)
                if let (_, payload, _) = try? LogFormat.readSnapshotFile(body, document: Self.document, path: "snapshot"),
                   let doc = try? ListDocument(snapshot: payload, replica: ReplicaID(5)) {
                    try doc.checkInvariants()
                }
            default:
                let epoch = input.take(8).reduce(0) { $0 << 8 | UInt64($1) }
                let payload = input.rest()
                let file = LogFormat.snapshotFile(payload, document: Self.document, epoch: epoch)
                let read = try LogFormat.readSnapshotFile(file, document: Self.document, path: "snapshot")
                #expect(read.epoch == epoch && Array(read.payload) == payload)
                if let doc = try? ListDocument(snapshot: payload, replica: ReplicaID(5)) { try doc.checkInvariants() }
            }
        }
        #expect(count > 0)
    }

    /// A record of any type byte, checksummed like the writer's.
    static func appendRecord(type: UInt8, payload: [UInt8], to out: inout [UInt8]) {
        if let known = LogRecordType(rawValue: type) {
            LogFormat.appendRecord(known, payload: payload, to: &out)
            return
        }
        let len = UInt32(payload.count + 1)
        let lenBytes = (0..<4).map { UInt8(truncatingIfNeeded: len >> (8 * $0)) }
        var crc = CRC32C()
        crc.update(lenBytes)
        crc.update(CollectionOfOne(type))
        crc.update(payload)
        let masked = CRC32C.masked(crc.value)
        out += lenBytes + (0..<4).map { UInt8(truncatingIfNeeded: masked >> (8 * $0)) } + [type] + payload
    }
}
