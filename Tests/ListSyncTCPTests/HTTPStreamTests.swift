#if canImport(Glibc)
import Glibc
import Foundation
import Synchronization
import Testing
import ListSyncTestSupport
import ListSync
import ListSyncTCP
@testable import ListSyncHTTP
import ListSyncTestTraits

/// A reference reader of `text/event-stream` (HTML Living Standard, "Parsing an event stream"),
/// fed one byte at a time: (event type, data) per dispatched event.
struct EventStreamReader {
    private var line: [UInt8] = []
    private var lastWasCR = false
    private var type = ""
    private var data = ""
    private(set) var events: [(type: String, data: String)] = []

    mutating func feed(_ byte: UInt8) {
        if byte == 10, lastWasCR { lastWasCR = false; return }   // the LF of a CR LF
        lastWasCR = byte == 13
        guard byte == 10 || byte == 13 else { line.append(byte); return }
        let text = String(decoding: line, as: UTF8.self)
        line = []
        if text.isEmpty {
            if !data.isEmpty {
                events.append((type.isEmpty ? "message" : type, String(data.dropLast())))
            }
            (type, data) = ("", "")
            return
        }
        if text.hasPrefix(":") { return }
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        var value = parts.count > 1 ? String(parts[1]) : ""
        if value.hasPrefix(" ") { value.removeFirst() }
        switch parts[0] {
        case "event": type = value
        case "data": data += value + "\n"
        default: break
        }
    }
}

/// The streams a test server made.
final class StreamList: Sendable { let list = Mutex<[HTTPStream]>([]) }

extension SocketTests {
    @Suite("HTTP streamed responses (server-sent events) over real sockets", .serialized, .hangGuard)
    struct HTTPStreamTests {
        @Test("an event's data with LF, CR, CR LF, colons and empty lines reads back whole, fed one byte at a time; event names cannot break a line")
        func eventEncoding() {
            let cases: [(String?, String)] = [(nil, "plain"), ("state", "a\nb\rc\r\nd"), ("x", "key: value"), ("y", "\n\nz\n"),
                                              ("bad\nevent: forged", "{\"json\":[1,2]}"), ("e", "ünïcødé ✓")]
            var reader = EventStreamReader()
            for (event, data) in cases {
                for b in ServerSentEvent(event: event, data: data).bytes { reader.feed(b) }
                for b in ServerSentEvent.comment("keep\nalive") { reader.feed(b) }
            }
            #expect(reader.events.count == cases.count)
            for (got, want) in zip(reader.events, cases) {
                let normalized = want.1.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
                #expect(got.data == normalized)
                #expect(got.type == (want.0.map { $0.replacingOccurrences(of: "\n", with: " ") } ?? "message"))
            }
        }

        /// A server whose `/events` streams: one event before the handler returns, the rest from the test.
        static func withStreamServer(options: HTTPServerOptions = .init(),
                                     _ body: (HTTPServer, StreamList) async throws -> Void) async throws {
            let streams = StreamList()
            let loop = try EventLoop()
            var options = options
            options.methods = ["GET", "HEAD", "POST"]
            let server = try await HTTPServer.listen(host: "127.0.0.1", port: 0, options: options, loop: loop) { request in
                guard request.path == "/events" else { return HTTPResponse(text: "\(request.method) \(request.path)") }
                let s = HTTPStream()
                s.send(ServerSentEvent(event: "hello", data: "first").bytes)
                streams.list.withLock { $0.append(s) }
                return HTTPResponse(headers: [("Content-Type", "text/event-stream")], stream: s)
            }
            do { try await body(server, streams) } catch {
                await server.close(); loop.shutdown(); throw error
            }
            await server.close()
            #expect(server.statistics.open == 0 && server.statistics.streams == 0)
            let left = await loop.registeredDescriptors()
            loop.shutdown()
            if left != 0 { throw TestFailure("\(left) socket(s) still open on the loop after the test") }
        }

        @Test("a stream's head has no Content-Length and says close; events sent before and after the head arrive in order; finish closes")
        func streamInOrder() async throws {
            try await Self.withStreamServer { server, streams in
                let raw = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                raw.send("GET /events HTTP/1.1\r\nHost: h\r\n\r\n")
                let head = try #require(await raw.readResponse(head: true))
                #expect(head.status == 200 && head.headers["content-length"] == nil && head.headers["connection"] == "close")
                #expect(head.headers["content-type"] == "text/event-stream")
                let s = try #require(streams.list.withLock { $0.first })
                for i in 0..<50 { #expect(s.send(ServerSentEvent(event: "n", data: "\(i)").bytes)) }
                s.finish()
                #expect(!s.send([1]))
                var reader = EventStreamReader()
                var bytes: [UInt8] = []
                while true {
                    let got = await raw.readSome(timeout: livenessGuardSeconds)
                    if got.isEmpty { break }
                    bytes += got
                }
                for b in bytes { reader.feed(b) }
                #expect(reader.events.map(\.data) == ["first"] + (0..<50).map(String.init))
                #expect(server.statistics.streams == 0)
            }
        }

        @Test("a client that leaves closes the stream: onClose runs once and send returns false; POST is answered when allowed")
        func clientLeaves() async throws {
            try await Self.withStreamServer { server, streams in
                let post = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                post.send("POST /x?a=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
                #expect(await post.readResponse()?.text == "POST /x")
                post.send("DELETE /x HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(await post.readResponse()?.headers["allow"] == "GET, HEAD, POST")
                var raw = RawSocket(port: server.port, source: "127.0.0.1")
                raw?.send("GET /events HTTP/1.1\r\nHost: h\r\n\r\n")
                _ = try #require(await raw?.readResponse(head: true))
                let s = try #require(streams.list.withLock { $0.first })
                let closes = Mutex(0)
                s.onClose { closes.withLock { $0 += 1 } }
                #expect(server.statistics.streams == 1)
                raw = nil   // the socket closes
                let deadline = Date().addingTimeInterval(livenessGuardSeconds)
                while !s.isClosed, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
                #expect(s.isClosed && closes.withLock { $0 } == 1 && !s.send([1]))
                s.onClose { closes.withLock { $0 += 1 } }   // after the close: at once
                #expect(closes.withLock { $0 } == 2)
            }
        }

        @Test("a client that does not read is cut off past maxStreamBuffer; streams over maxStreams get 503")
        func slowAndTooMany() async throws {
            var options = HTTPServerOptions()
            options.maxStreamBuffer = 64 << 10
            options.maxStreams = 1
            try await Self.withStreamServer(options: options) { server, streams in
                let raw = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                raw.send("GET /events HTTP/1.1\r\nHost: h\r\n\r\n")
                _ = try #require(await raw.readResponse(head: true))
                let second = try #require(RawSocket(port: server.port, source: "127.0.0.1"))
                second.send("GET /events HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(await second.readResponse()?.status == 503)
                let s = try #require(streams.list.withLock { $0.first })
                let chunk = [UInt8](repeating: 65, count: 16 << 10)
                var sent = 0
                let deadline = Date().addingTimeInterval(livenessGuardSeconds)
                while s.send(chunk), Date() < deadline {
                    sent += chunk.count
                    if sent > 64 << 20 { break }
                    try await Task.sleep(for: .milliseconds(1))
                }
                #expect(s.isClosed, "sent \(sent) bytes to a client that reads nothing")
                #expect(server.statistics.slowStreams == 1)
            }
        }
    }
}
#endif
