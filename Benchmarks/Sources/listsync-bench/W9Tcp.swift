import Foundation
import ListCRDT
import ListSync
import ListSyncTCP
import Synchronization

// W9.tcp: two replicas on loopback TCP (the real transport: epoll loop, handshake, sealed frames).
// (a) bulk: A holds the whole automerge-paper history; B connects and catches up through
//     protocol's catch-up frames (OperationFrames: at most 512 operations / 1 MiB per frame).
// (b) stream: A makes the trace's edits one operation per frame, pipelined, until B has them all.
// (c) latency: 10,000 edits one at a time, each waiting for its arrival at B (edit -> applied at B).
// Beside W3 (the same protocol over the in-memory network).

/// Runs `body` on the cooperative pool and waits for it (the benchmark driver is synchronous).
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let box = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let r: Result<T, any Error>
        do { r = .success(try await body()) } catch { r = .failure(error) }
        box.withLock { $0 = r }
        done.signal()
    }
    done.wait()
    return try box.withLock { $0! }.get()
}

/// B's side: reads frames, runs its session, applies operations, reports each arrival.
actor W9Receiver {
    var doc = ListDocument(replica: ReplicaID(2))
    let transport: TCPTransport
    /// Called with B's operation count after each frame.
    var onProgress: (@Sendable (Int) -> Void)?

    init(_ t: TCPTransport) { transport = t }

    func setProgress(_ f: @escaping @Sendable (Int) -> Void) { onProgress = f }

    func handle(_ frame: [UInt8]) async throws {
        if case let .operations(_, _, ops) = try SyncMessage(decoding: frame) { doc.receive(ops) }
        onProgress?(doc.operationCount)
    }

    var text: [UInt8] { textBytes(doc) }
}

func w9Tcp(_ ctx: Context) throws -> BenchResult {
    let trace = try ctx.loadTrace()
    let edits = trace.edits
    // Untimed: A's document with the whole history.
    var full = ListDocument(replica: ReplicaID(1))
    try full.insertSection(at: 0)
    var none: [ListOperation]? = nil
    try applyTrace(&full, edits, 0, edits.count, collect: &none)
    let fullDoc = full
    let key = SecureRandomKey.make()

    return try blocking { () async throws -> BenchResult in
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let listener = try await TCPListener.listen(host: "127.0.0.1", port: 0, key: key, loop: loop)
        var res = BenchResult(workload: "W9.tcp", ops: edits.count)

        // (a) bulk catch-up.
        let t0 = nowNs()
        let accepted = Task { try await listener.acceptTCP() }
        let bSide = try await TCPTransport.connect(host: "127.0.0.1", port: listener.port, key: key, loop: loop)
        let aSide = try await accepted.value
        let target = fullDoc.operationCount
        let (progress, progressSink) = AsyncStream.makeStream(of: Int.self)
        let receiver = W9Receiver(bSide)
        await receiver.setProgress { progressSink.yield($0) }
        let reader = Task {
            for await frame in bSide.incoming { try await receiver.handle(frame) }
        }
        // A sends its whole history as the protocol's catch-up frames (`operations`, batch 0).
        for (f, _) in OperationFrames.split(W9.document, fullDoc.operations[...], maxFrame: aSide.maxFrame) {
            try await aSide.send(f)
        }
        for await n in progress where n >= target { break }
        let bulkNs = nowNs() - t0
        let bulkBytes = aSide.traffic.sent
        res.set("bulk_ms", Double(bulkNs) / 1e6)
        res.set("bulk_bytes", bulkBytes)
        res.set("bulk_mb_s", Double(bulkBytes) / (Double(bulkNs) / 1e9) / 1e6)
        let bulkOK = await receiver.text == textBytes(fullDoc)

        // (b) streaming, pipelined: a fresh pair of documents, one operation per frame.
        var streamA = ListDocument(replica: ReplicaID(3))
        try streamA.insertSection(at: 0)
        let sectionOp = streamA.operations
        let (progress2, sink2) = AsyncStream.makeStream(of: Int.self)
        let accepted2 = Task { try await listener.acceptTCP() }
        let b2 = try await TCPTransport.connect(host: "127.0.0.1", port: listener.port, key: key, loop: loop)
        let a2 = try await accepted2.value
        let receiver2 = W9Receiver(b2)
        await receiver2.setProgress { sink2.yield($0) }
        let reader2 = Task { for await frame in b2.incoming { try await receiver2.handle(frame) } }
        try await a2.send(SyncMessage.operations(document: W9.document, batch: 0, operations: sectionOp).encoded())
        var ops: [ListOperation]? = []
        let s0 = nowNs()
        var sent = 0
        for k in 0..<edits.count {
            try applyTrace(&streamA, edits, k, k + 1, collect: &ops)
            for op in ops! {
                try await a2.send(SyncMessage.operations(document: W9.document, batch: 0, operations: [op]).encoded())
                sent += 1
            }
            ops!.removeAll(keepingCapacity: true)
        }
        let expected = streamA.operationCount
        for await n in progress2 where n >= expected { break }
        let streamNs = nowNs() - s0
        res.set("stream_ops_per_s", Double(sent) / (Double(streamNs) / 1e9))
        res.set("stream_ms", Double(streamNs) / 1e6)
        res.set("stream_frames", sent)
        let streamOK = await receiver2.text == textBytes(streamA)

        // (c) latency: one edit at a time, each waiting for its arrival.
        var lat: [UInt64] = []
        let n = min(10_000, edits.count)
        var latA = ListDocument(replica: ReplicaID(4))
        try latA.insertSection(at: 0)
        let (progress3, sink3) = AsyncStream.makeStream(of: Int.self)
        let accepted3 = Task { try await listener.acceptTCP() }
        let b3 = try await TCPTransport.connect(host: "127.0.0.1", port: listener.port, key: key, loop: loop)
        let a3 = try await accepted3.value
        let receiver3 = W9Receiver(b3)
        await receiver3.setProgress { sink3.yield($0) }
        let reader3 = Task { for await frame in b3.incoming { try await receiver3.handle(frame) } }
        var it = progress3.makeAsyncIterator()
        try await a3.send(SyncMessage.operations(document: W9.document, batch: 0, operations: latA.operations).encoded())
        _ = await it.next()
        for k in 0..<n {
            let t = nowNs()
            try applyTrace(&latA, edits, k, k + 1, collect: &ops)
            try await a3.send(SyncMessage.operations(document: W9.document, batch: 0, operations: ops!).encoded())
            ops!.removeAll(keepingCapacity: true)
            let want = latA.operationCount
            while let got = await it.next(), got < want {}
            lat.append(nowNs() - t)
        }
        lat.sort()
        res.set("latency_p50_us", Double(lat[lat.count / 2]) / 1e3)
        res.set("latency_p99_us", Double(lat[lat.count * 99 / 100]) / 1e3)

        for t in [aSide, bSide, a2, b2, a3, b3] { await t.close() }
        await listener.close()
        _ = await (reader.result, reader2.result, reader3.result)
        progressSink.finish(); sink2.finish(); sink3.finish()
        res.ok = bulkOK && streamOK
        res.note = "loopback TCP with the key handshake and ChaCha20-Poly1305 frames. bulk: B catches up on A's whole "
            + "history as the protocol's operations frames (bytes = what A wrote, handshake and tags included); stream: every trace "
            + "operation in its own frame, pipelined; latency: \(n) edits one at a time, edit -> applied at B"
        return res
    }
}

enum SecureRandomKey {
    static func make() -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }
    }
}

enum W9 {
    static let document = DocumentID(high: 9, low: 9)
}
