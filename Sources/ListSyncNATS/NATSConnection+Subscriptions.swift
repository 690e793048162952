import ListSyncTCP

/// A subscription's messages, as an async sequence; ends when unsubscribed or the connection closes.
public struct NATSSubscription: Sendable {
    /// The subscription's id on its connection.
    public let sid: UInt64
    /// The subject (wildcards allowed).
    public let subject: String
    /// The messages, in the order the server delivered them (kept without bound until read).
    public let messages: AsyncStream<NATSMessage>
    let connection: NATSConnection

    /// Ends the subscription (`UNSUB`); the stream finishes.
    public func unsubscribe() async { await connection.unsubscribe(sid) }
}

extension NATSConnection {
    /// Subscribes to `subject` (in `queue` group, if given); messages arrive on the returned
    /// subscription's stream. Sent again after each reconnection.
    ///
    /// - Throws: ``NATSError/invalid(_:)`` for a malformed subject or queue, ``NATSError/closed``.
    public func subscribe(_ subject: String, queue: String? = nil) async throws(NATSError) -> NATSSubscription {
        let (stream, continuation) = AsyncStream.makeStream(of: NATSMessage.self)
        let sid = try await subscribe(subject, queue: queue, deliver: { continuation.yield($0) }, finish: { continuation.finish() })
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            Task { await self.unsubscribe(sid) }
        }
        return NATSSubscription(sid: sid, subject: subject, messages: stream, connection: self)
    }

    /// Subscribes with a callback run on the loop's thread for each message, and `finish` once
    /// when the subscription ends. Returns the sid.
    package func subscribe(_ subject: String, queue: String? = nil, deliver: @escaping @Sendable (NATSMessage) -> Void,
                           finish: @escaping @Sendable () -> Void = {}) async throws(NATSError) -> UInt64 {
        do { _ = try NATSCommand.subscribe(subject, queue: queue, sid: 1) } catch { throw .invalid(error) }
        let result: Result<UInt64, NATSError> = await onLoop { [self] in
            nextSID += 1
            let sid = nextSID
            subscriptions[sid] = Subscription(subject: subject, queue: queue, deliver: deliver, finish: finish)
            do throws(NATSError) {
                // Checked above: the same subject and queue with another sid encode too.
                try send((try? NATSCommand.subscribe(subject, queue: queue, sid: sid)) ?? [])
            } catch {
                subscriptions[sid] = nil
                return .failure(error)
            }
            return .success(sid)
        }
        return try result.get()
    }

    /// Ends subscription `sid` (nothing if it ended already).
    package func unsubscribe(_ sid: UInt64) async {
        await onLoop { [self] in
            guard let sub = subscriptions.removeValue(forKey: sid) else { return }
            try? send(NATSCommand.unsubscribe(sid: sid))
            sub.finish()
        }
    }

    /// Hands a delivered message to its subscription (dropped if it ended). Loop thread only.
    func route(_ message: NATSMessage) {
        if message.sid == requestSID {
            answer(message)
            return
        }
        subscriptions[message.sid]?.deliver(message)
    }

    /// Ends every subscription (the connection is closed). Loop thread only.
    func finishSubscriptions() {
        let subs = subscriptions
        subscriptions = [:]
        for sid in subs.keys.sorted() { subs[sid]!.finish() }
    }

    // MARK: Request and reply

    /// Publishes `payload` to `subject` with a reply subject of this connection's inbox and waits
    /// for the first answer.
    ///
    /// - Throws: ``NATSError/noResponders(_:)`` when nobody subscribes to `subject` (the server
    ///   says so at once), ``NATSError/timeout(_:)``, ``NATSError/disconnected(_:)``,
    ///   ``NATSError/invalid(_:)``, ``NATSError/closed``.
    public func request(_ subject: String, headers: NATSHeaders? = nil, payload: [UInt8],
                        timeout: Duration? = nil) async throws(NATSError) -> NATSMessage {
        do { _ = try NATSCommand.publish(subject, headers: headers, payload: payload) } catch { throw .invalid(error) }
        if await onLoop({ [self] in requestSID == nil }) {
            let sid = try await subscribe(inboxPrefix + ".*", deliver: { _ in })
            await onLoop { [self] in
                if requestSID == nil { requestSID = sid } else {
                    subscriptions[sid] = nil
                    try? send(NATSCommand.unsubscribe(sid: sid))
                }
            }
        }
        let wait = timeout ?? options.requestTimeout
        let result: Result<NATSMessage, NATSError> = await withCheckedContinuation { c in
            loop.execute { [self] in
                nextToken += 1
                let token = String(nextToken)
                let timer = loop.schedule(after: wait) { [weak self] in
                    guard let r = self?.requests.removeValue(forKey: token) else { return }
                    r.done(.failure(.timeout("request on \(subject) after \(wait)")))
                }
                requests[token] = (timer, { c.resume(returning: $0) })
                do throws(NATSError) {
                    // Encoded above already: cannot fail here.
                    let bytes = (try? NATSCommand.publish(subject, replyTo: inboxPrefix + "." + token, headers: headers, payload: payload)) ?? []
                    try send(bytes)
                } catch {
                    loop.cancel(timer)
                    requests[token] = nil
                    c.resume(returning: .failure(error))
                }
            }
        }
        var message = try result.get()
        if message.headers?.status == 503 { throw .noResponders(subject) }
        message.sid = 0
        return message
    }

    private func answer(_ message: NATSMessage) {
        guard message.subject.hasPrefix(inboxPrefix + ".") else { return }
        let token = String(message.subject.dropFirst(inboxPrefix.count + 1))
        guard let r = requests.removeValue(forKey: token) else { return }
        loop.cancel(r.timer)
        r.done(.success(message))
    }
}
