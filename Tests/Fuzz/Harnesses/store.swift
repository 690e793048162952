// Log records and snapshot files: LogScan.scan (the store's recovery scan, with its record
// decoding) and LogFormat.readSnapshotFile, then the snapshot payload into
// ListDocument(snapshot:replica:) as DocumentStore.open does (Docs/Storage.md).
//
// The first byte picks a mode:
//   0: a valid log header, then raw bytes;
//   1: a valid log header, then records whose length and checksum the harness computes (so the
//      fuzzer reaches the payload decoders past the CRC): `type u8 | length u16 | payload`, and a
//      raw tail after the first type byte 0xff;
//   2: the whole file raw, as a log (header included) and as a snapshot file;
//   3: a snapshot file the harness frames correctly around a fuzzed payload: it must read back.
// Properties: no crash; the intact prefix a scan reports rescans to the same records with no
// damage; an intact snapshot file gives back its epoch and payload.
import ListCRDT
import ListStore

let documentID = DocumentID(high: 0x1111_2222_3333_4444, low: 0x5555_6666_7777_8888)

func fuzzSeeds() -> [[UInt8]] {
    var records: [UInt8] = []
    for batch in FuzzDocuments.batches().prefix(4) {
        let payload = ListOperation.encode(batch)
        records += [LogRecordType.operations.rawValue, UInt8(payload.count & 0xff), UInt8(payload.count >> 8)] + payload
    }
    records += [LogRecordType.epoch.rawValue, 8, 0] + [2, 0, 0, 0, 0, 0, 0, 0]
    var log = LogFormat.logHeader(documentID)
    for batch in FuzzDocuments.batches().prefix(2) {
        LogFormat.appendRecord(.operations, payload: ListOperation.encode(batch), to: &log)
    }
    log += LogFormat.epochRecord(3)
    let snapshot = FuzzDocuments.shared().encodedSnapshot()
    return [
        [0] + Array(log.dropFirst(LogFormat.logHeaderSize)),
        [0] + Array(log.dropFirst(LogFormat.logHeaderSize)) + [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        [1] + records,
        [1] + records + [0xff, 5, 0, 0, 0],
        [2] + log,
        [2] + LogFormat.snapshotFile(snapshot, document: documentID, epoch: 4),
        [3, 4, 0, 0, 0, 0, 0, 0, 0] + snapshot,
    ]
}

func fuzzOne(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    switch input.byte() % 4 {
    case 0:
        scan(LogFormat.logHeader(documentID) + input.rest())
    case 1:
        var log = LogFormat.logHeader(documentID)
        while !input.isAtEnd {
            let type = input.byte()
            if type == 0xff { log += input.rest(); break }
            let payload = input.take(input.u16())
            appendRecord(type: type, payload: payload, to: &log)
        }
        scan(log)
    case 2:
        let file = input.rest()
        scan(file)
        if let (_, payload, _) = try? LogFormat.readSnapshotFile(file, document: documentID, path: "snapshot") {
            load(payload)
        }
    default:
        let epoch = input.take(8).reduce(0) { $0 << 8 | UInt64($1) }
        let payload = input.rest()
        let file = LogFormat.snapshotFile(payload, document: documentID, epoch: epoch)
        do {
            let read = try LogFormat.readSnapshotFile(file, document: documentID, path: "snapshot")
            guard read.epoch == epoch, Array(read.payload) == payload else { fuzzFailure("snapshot file read back differs") }
        } catch {
            fuzzFailure("a snapshot file made by snapshotFile does not read: \(error)")
        }
        load(payload[...])
    }
}

/// A record of any type byte (the writer only writes known ones), checksummed like the writer's.
func appendRecord(type: UInt8, payload: [UInt8], to out: inout [UInt8]) {
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

func scan(_ log: [UInt8]) {
    let result: LogScan
    do { result = try LogScan.scan(log, document: documentID) } catch { return }
    guard result.validLength >= LogFormat.logHeaderSize, result.validLength <= log.count else {
        fuzzFailure("valid length \(result.validLength) of \(log.count) bytes")
    }
    guard (result.damage == nil) == (result.validLength + result.preallocated == log.count),
          result.damage == nil || result.preallocated == 0 else { fuzzFailure("damage, preallocated space and valid length disagree") }
    guard log[result.validLength..<result.validLength + result.preallocated].allSatisfy({ $0 == 0 }) else {
        fuzzFailure("preallocated space that is not zeros")
    }
    if result.damage != nil || result.preallocated > 0 {
        let again: LogScan
        do { again = try LogScan.scan(Array(log[..<result.validLength]), document: documentID) } catch {
            fuzzFailure("the intact prefix's header does not check: \(error)")
        }
        guard again.records == result.records, again.damage == nil else { fuzzFailure("the intact prefix rescans differently") }
    }
}

func load(_ payload: ArraySlice<UInt8>) {
    guard let doc = try? ListDocument(snapshot: payload, replica: ReplicaID(5)) else { return }
    do { try doc.checkInvariants() } catch { fuzzFailure("\(error)") }
}
