import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncTCP

extension DaemonMessage {
    /// `operations` messages for `ops`, each under `maxFrame` bytes where one operation allows
    /// (at most 512 operations each), in order.
    ///
    /// - Complexity: O(size · log(ops per frame)) in the worst case of halving.
    static func operationFrames(_ document: DocumentID, batch: UInt64, _ ops: [ListOperation], maxFrame: Int) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        var start = 0
        while start < ops.count {
            var end = min(start + 512, ops.count)
            var frame = DaemonMessage.operations(document: document, batch: batch, operations: Array(ops[start..<end])).encoded()
            while frame.count > maxFrame, end - start > 1 {
                end = start + (end - start) / 2
                frame = DaemonMessage.operations(document: document, batch: batch, operations: Array(ops[start..<end])).encoded()
            }
            frames.append(frame)
            start = end
        }
        return frames
    }
}

/// One client's or peer's connection to the daemon: decodes its messages and answers them.
/// A malformed message gets an ERROR and the connection is closed; nobody else notices.
actor DaemonConnection: DocumentSubscriber {
    let transport: TCPTransport
    private weak var daemon: Daemon?
    private var subscriptions: [DocumentID: DocumentHost] = [:]
    /// Whether the peer listed the documents: it then hears of every new one at once.
    private(set) var followsDocuments = false

    /// This connection's batches (nil: no limit), and how many it had refused.
    private var bucket: TokenBucket?
    private var rateLimitedHere = 0

    init(transport: TCPTransport, daemon: Daemon) {
        self.transport = transport
        bucket = daemon.configuration.rateLimit.map { TokenBucket($0, now: DispatchTime.now().uptimeNanoseconds) }
        self.daemon = daemon
    }

    /// Handles messages until the connection closes.
    func run() async {
        for await frame in transport.incoming {
            let message: DaemonMessage
            do { message = try DaemonMessage(decoding: frame) } catch {
                await send(.error(request: 0, document: nil, code: .malformed, text: error.description))
                await transport.close(reason: "malformed message")
                break
            }
            daemon?.metrics.received(operations: 0, bytes: frame.count)
            await handle(message)
        }
        for (_, h) in subscriptions { await h.unsubscribe(self) }
        subscriptions = [:]
    }

    /// Closes the connection with `reason`.
    func close(reason: String) async {
        await transport.close(reason: reason)
    }

    nonisolated func push(_ document: DocumentID, _ operations: [ListOperation]) async {
        for f in DaemonMessage.operationFrames(document, batch: 0, operations, maxFrame: transport.maxFrame) {
            try? await transport.send(f)
        }
        await daemon?.metrics.sent(operations: operations.count, bytes: 0)
    }

    /// Tells a peer that follows the document list about a new document (an unsolicited
    /// `documents` message, request 0).
    func announce(_ info: DocumentInfo) async {
        guard followsDocuments else { return }
        await send(.documents(request: 0, [info]))
    }

    private func send(_ m: DaemonMessage) async {
        let bytes = m.encoded()
        try? await transport.send(bytes)
    }

    private func handle(_ message: DaemonMessage) async {
        guard let daemon else { return }
        switch message {
        case let .subscribe(doc, epoch, version):
            // A host unloaded between the lookup and the subscription is asked for again.
            for _ in 0 ..< 10 {
                let host: DocumentHost
                do { host = try await daemon.host(doc) } catch {
                    return await send(.error(request: 0, document: doc, code: code(error), text: error.description))
                }
                let current = await host.epoch
                guard epoch == 0 || epoch == current else {
                    return await send(.error(request: 0, document: doc, code: .epochMismatch,
                                             text: "document \(doc) is at epoch \(current), not \(epoch): it was reset or restored; re-attach"))
                }
                guard let s = await host.subscribe(self, version: version) else { continue }
                subscriptions[doc] = host
                await send(.subscribed(document: doc, name: s.name, epoch: s.epoch, version: s.version))
                if !s.missing.isEmpty { await push(doc, s.missing) }
                return
            }
            await send(.error(request: 0, document: doc, code: .storage, text: "document \(doc) could not be loaded; try again"))
        case let .unsubscribe(doc):
            if let h = subscriptions.removeValue(forKey: doc) { await h.unsubscribe(self) }
        case let .operations(doc, batch, ops):
            guard let host = subscriptions[doc] else {
                return await send(.error(request: batch, document: doc, code: .unknownDocument,
                                         text: "subscribe to \(doc) before sending its operations"))
            }
            if bucket?.take(now: DispatchTime.now().uptimeNanoseconds) == false, let limit = bucket?.limit {
                daemon.metrics.rateLimited()
                if rateLimitedHere == 0 {   // one line per connection, not one per batch
                    daemon.log("rate limited", ["from": transport.remoteAddress.description,
                                                "limit": "\(Int(limit.rate)) batches/s"])
                }
                rateLimitedHere += 1
                return await send(.error(request: batch, document: doc, code: .limit,
                                         text: "rate limit: over \(Int(limit.rate)) batches a second (bursts of \(Int(limit.burst))); this batch was refused, send it again later"))
            }
            let start = DispatchTime.now().uptimeNanoseconds
            do {
                let (version, report) = try await host.receive(ops, from: self)
                daemon.metrics.appended(seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
                daemon.metrics.received(operations: report.applied, bytes: 0)
                if let first = report.equivocations.first {
                    // Recorded: someone holding the key sent an operation under a known id with
                    // other content (a forked replica, or an attack); refused, nothing changed.
                    daemon.metrics.equivocated(report.equivocations.count)
                    daemon.log("equivocation refused", ["document": doc.description, "operation": "\(first)",
                                                        "count": "\(report.equivocations.count)",
                                                        "from": transport.remoteAddress.description])
                }
                if !report.refused.isEmpty {
                    daemon.metrics.refused()
                    await send(.error(request: batch, document: doc, code: .refused,
                                      text: "\(report.refused.count) operation(s) refused: \(report.refused.first!)"))
                }
                if batch != 0 {
                    daemon.metrics.acknowledged()
                    await send(.ack(document: doc, batch: batch, version: version))
                }
            } catch {
                // Not durable: not applied, not acknowledged. The client keeps it and resends.
                daemon.metrics.storageFailed(error.description)
                await send(.error(request: batch, document: doc, code: .storage, text: error.description))
            }
        case let .hello(doc, version):
            guard let host = subscriptions[doc] else { return }
            let missing = await host.operations(since: version)
            if !missing.isEmpty { await push(doc, missing) }
        case let .create(request, name, sections, id, epoch):
            do {
                let (made, madeEpoch) = try await daemon.create(name: name, sections: sections, id: id, epoch: epoch)
                await send(.created(request: request, document: made, epoch: madeEpoch))
            } catch {
                await send(.error(request: request, document: id, code: code(error), text: error.description))
            }
        case let .listDocuments(request):
            followsDocuments = true
            await send(.documents(request: request, await daemon.list()))
        case let .status(request):
            await send(.statusReport(request: request, json: await daemon.statusJSON()))
        case .subscribed, .ack, .created, .documents, .statusReport, .error:
            await send(.error(request: 0, document: nil, code: .unsupported, text: "a daemon does not take that message"))
        }
    }

    private func code(_ error: DaemonError) -> DaemonErrorCode {
        switch error {
        case .unknownDocument: return .unknownDocument
        case .limit: return .limit
        case .storage: return .storage
        default: return .unsupported
        }
    }
}
