import Foundation
import Testing
import ListSyncNATS
import ListSyncTCP
import ListSyncTransport
import ListSyncTestSupport
import ListSyncTestTraits

/// The JetStream error code `body` fails with (`nil` if it does not fail with an API error).
func apiCode(_ body: () async throws -> Void) async -> Int? {
    do {
        try await body()
        return nil
    } catch {
        if case let .api(_, code, _)? = error as? JetStreamError { return code }
        return nil
    }
}

/// JetStream (streams, acknowledged publish with dedup and compare-and-set, the ordered consumer,
/// key-value) against a real `nats-server -js`.
@Suite(.serialized, .ownThread, .enabled(if: NATSServerProcess.available, "nats-server is not installed"))
struct JetStreamLiveTests {
    func connect(_ server: NATSServerProcess) async throws -> JetStream {
        var o = NATSOptions()
        o.reconnectBackoff = Backoff(initial: .milliseconds(50), maximum: .milliseconds(300))
        let c = try await NATSConnection.connect(to: [NATSServerAddress(host: server.host, port: server.port)], options: o)
        return JetStream(c, timeout: .seconds(20))
    }

    @Test func streamsPublishDedupAndCompareAndSet() async throws {
        let server = try NATSServerProcess(host: "127.0.0.5")
        defer { server.remove() }
        let js = try await connect(server)
        var config = StreamConfig(name: "DOCS", subjects: ["doc.>"])
        config.maxMsgs = 5
        let info = try await js.createStream(config)
        #expect(info.config.name == "DOCS" && info.config.discard == .new && info.config.maxMsgs == 5)
        let a1 = try await js.publish("doc.a", payload: [1], messageID: "op-1")
        let again = try await js.publish("doc.a", payload: [1], messageID: "op-1")
        #expect(a1.sequence == 1 && !a1.duplicate)
        #expect(again.sequence == 1 && again.duplicate)
        // Compare-and-set on the subject's last sequence.
        let a2 = try await js.publish("doc.a", payload: [2], expectedLastSubjectSequence: 1)
        #expect(a2.sequence == 2)
        let lost = await apiCode { _ = try await js.publish("doc.a", payload: [3], expectedLastSubjectSequence: 1) }
        #expect(lost == JetStreamError.wrongLastSequence)
        let b = try await js.publish("doc.b", payload: [9], headers: NATSHeaders([("X-Tag", "t")]))
        let got = try await js.getMessage("DOCS", sequence: b.sequence)
        #expect(got?.payload == [9] && got?.subject == "doc.b" && got?.headers?["X-Tag"] == "t")
        #expect(try await js.getMessage("DOCS", lastBySubject: "doc.a")?.payload == [2])
        #expect(try await js.getMessage("DOCS", lastBySubject: "doc.none") == nil)
        // discard new: a full stream refuses (the publisher learns it) rather than dropping.
        _ = try await js.publish("doc.c", payload: [4])
        _ = try await js.publish("doc.c", payload: [5])
        await #expect(throws: JetStreamError.self) { _ = try await js.publish("doc.c", payload: [6]) }
        let state = try await js.streamInfo("DOCS", subjectsFilter: ">")
        #expect(state.messages == 5 && state.lastSequence == 5 && state.subjects == ["doc.a": 2, "doc.b": 1, "doc.c": 2])
        // No stream takes the subject: no responders.
        var noResponders = false
        do { _ = try await js.publish("other.x", payload: []) } catch {
            if case .nats(.noResponders) = error { noResponders = true }
        }
        #expect(noResponders)
        // Purge one subject below a sequence (a trim), then all of another; the rest stays.
        #expect(try await js.purge("DOCS", subject: "doc.a", keepFrom: 2) == 1)
        #expect(try await js.purge("DOCS", subject: "doc.c") == 2)
        #expect(try await js.streamInfo("DOCS", subjectsFilter: ">").subjects == ["doc.a": 1, "doc.b": 1])
        #expect(try await js.getMessage("DOCS", sequence: 1) == nil)
        #expect(try await js.getMessage("DOCS", sequence: 2)?.payload == [2])
        try await js.deleteStream("DOCS")
        let gone = await apiCode { _ = try await js.streamInfo("DOCS") }
        #expect(gone == JetStreamError.streamNotFound)
        await js.connection.close()
    }

    @Test func orderedConsumerReadsFromASequenceThenFollowsAcrossARestart() async throws {
        let server = try NATSServerProcess(host: "127.0.0.6")
        defer { server.remove() }
        let js = try await connect(server)
        try await js.createStream(StreamConfig(name: "S", subjects: ["s.>"]))
        for i in 1...10 { _ = try await js.publish(i % 2 == 0 ? "s.even" : "s.odd", payload: [UInt8(i)]) }
        let consumer = try await OrderedConsumer.start(js, stream: "S", filter: "s.even", from: 5, heartbeat: .seconds(1))
        var it = consumer.messages.makeAsyncIterator()
        var seen: [UInt64] = []
        for _ in 0..<3 { if let m = await it.next() { seen.append(m.sequence) } }
        #expect(seen == [6, 8, 10])
        _ = try await js.publish("s.even", payload: [12])
        #expect(await it.next()?.sequence == 11)
        // The server restarts (file store kept): the consumer is made again after the last one.
        server.stop()
        try server.restart()
        let deadline = Date().addingTimeInterval(30)
        var published: PublishAck?
        while published == nil, Date() < deadline {
            published = try? await js.publish("s.even", payload: [13])
            if published == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(published?.sequence == 12)
        #expect(await it.next()?.sequence == 12)
        #expect(consumer.resets >= 1)
        await consumer.stop()
        #expect(await it.next() == nil)
        await js.connection.close()
    }

    @Test func keyValueBucketPutGetCompareAndSetAndKeys() async throws {
        let server = try NATSServerProcess(host: "127.0.0.7")
        defer { server.remove() }
        let js = try await connect(server)
        let kv = try await KeyValue.open(js, bucket: "docs")
        #expect(try await kv.get("a") == nil)
        let r1 = try await kv.update("a", Array("x".utf8), revision: 0)
        await #expect(throws: JetStreamError.self) { try await kv.update("a", Array("y".utf8), revision: 0) }
        let r2 = try await kv.update("a", Array("y".utf8), revision: r1)
        try await kv.put("b.c", Array("z".utf8))
        #expect(try await kv.get("a") == KeyValue.Entry(key: "a", value: Array("y".utf8), revision: r2))
        #expect(try await kv.keys() == ["a", "b.c"])
        await #expect(throws: JetStreamError.self) { try await kv.put("bad key", []) }
        // Opening it again (another node) finds the same bucket.
        let again = try await KeyValue.open(js, bucket: "docs")
        #expect(try await again.get("b.c")?.value == Array("z".utf8))
        await js.connection.close()
    }
}
