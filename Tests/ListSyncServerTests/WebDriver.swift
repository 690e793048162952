#if canImport(Glibc)
import Foundation
import ListSyncTestTraits
import ListSyncTestSupport
import Glibc

/// A small client of chromedriver's W3C WebDriver API (HTTP and JSON on 127.0.0.1), enough for
/// the web view's browser tests: sessions of headless Chromium, navigation, scripts, and real
/// input through the Actions API (pointer and key events dispatched by the browser itself).
/// Every request has a deadline; ``ChromeDriver/stop()`` ends the browsers, then chromedriver.
final class ChromeDriver: @unchecked Sendable {
    // @unchecked Sendable: `process` and `port` are set in init and only read after; `sessions`
    // is touched by the test's own thread.
    let process: Process
    let port: UInt16
    private let output = OutputBuffer()
    private var sessions: [String] = []

    /// Where Debian puts them (`apt-get install chromium chromium-driver`).
    static let chromium = "/usr/bin/chromium"
    static let chromedriver = "/usr/bin/chromedriver"

    /// Whether the browser can run here; on CI (`CI=true`) a missing browser is a failure, not a skip.
    static var available: Bool {
        FileManager.default.isExecutableFile(atPath: chromium) && FileManager.default.isExecutableFile(atPath: chromedriver)
    }

    /// Starts chromedriver on a free loopback port and waits (up to 30 s) until it is ready. The
    /// port is found free and then bound by chromedriver, so another process may take it between
    /// the two: a chromedriver that exits at once is started again on another port (3 tries).
    init() throws {
        guard Self.available else { throw DaemonTestError("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)") }
        var tries = 0
        while true {
            tries += 1
            let port = try Self.freePort()
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Self.chromedriver)
            p.arguments = ["--port=\(port)", "--log-level=WARNING"]   // no --allowed-ips: it would listen on every interface
            let out = Pipe()
            p.standardOutput = out
            p.standardError = out
            let sink = output
            PipeDrain.start(out) { sink.append($0) }
            try p.run()
            if Self.ready(p, port: port) {
                (process, self.port) = (p, port)
                return
            }
            if p.isRunning { kill(p.processIdentifier, SIGKILL) }
            p.waitUntilExit()
            if tries == 3 { throw DaemonTestError("chromedriver did not start (3 tries): \(output.text)") }
        }
    }

    /// Whether chromedriver `p` answers `/status` ready on `port` within 30 s (false as soon as it exits).
    private static func ready(_ p: Process, port: UInt16) -> Bool {
        let deadline = Date().addingTimeInterval(livenessGuardSeconds)
        while Date() < deadline {
            if let (status, body) = try? http(method: "GET", port: port, path: "/status", body: [], timeout: 2), status == 200,
               let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
               let value = object["value"] as? [String: Any], value["ready"] as? Bool == true { return true }
            guard p.isRunning else { return false }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    /// A port free on 127.0.0.1 now, below the ephemeral range (`LoopbackPorts`), so no client
    /// connection's local end takes it before chromedriver binds it.
    static func freePort() throws -> UInt16 { try LoopbackPorts.restartable() }

    /// A new headless Chromium, its profile in `profile` (a fresh folder).
    func browser(profile: String) throws -> Browser {
        let capabilities: [String: Any] = ["capabilities": ["alwaysMatch": [
            "browserName": "chrome",
            "goog:chromeOptions": ["binary": Self.chromium,
                                   "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                                            "--disable-extensions", "--disable-background-networking", "--window-size=900,900",
                                            "--user-data-dir=\(profile)"]],
        ] as [String: Any]]]
        let answer = try request("POST", "/session", capabilities, timeout: 90)
        guard let value = (answer as? [String: Any])?["value"] as? [String: Any], let id = value["sessionId"] as? String else {
            throw DaemonTestError("no WebDriver session: \(answer)")
        }
        sessions.append(id)
        return Browser(driver: self, session: id)
    }

    /// Ends every browser (their sessions), then chromedriver (SIGKILL), and waits for it.
    func stop() {
        for s in sessions { _ = try? request("DELETE", "/session/\(s)", timeout: 30) }
        sessions = []
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// One WebDriver call: the decoded JSON answer; an HTTP error status throws with its message.
    @discardableResult
    func request(_ method: String, _ path: String, _ body: Any? = nil, timeout: Double = 60) throws -> Any {
        let payload = try body.map { try JSONSerialization.data(withJSONObject: $0) } ?? Data()
        let (status, data) = try Self.http(method: method, port: port, path: path, body: [UInt8](payload), timeout: timeout)
        let json = (try? JSONSerialization.jsonObject(with: Data(data), options: [.fragmentsAllowed])) ?? [:]
        guard status == 200 else { throw DaemonTestError("WebDriver \(method) \(path): \(status) \(String(decoding: data.prefix(600), as: UTF8.self))") }
        return json
    }

    /// A blocking HTTP/1.1 exchange with 127.0.0.1:`port` (`Connection: close`; the body read to
    /// the close), bounded by `timeout` seconds.
    static func http(method: String, port: UInt16, path: String, body: [UInt8], timeout: Double) throws -> (Int, [UInt8]) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw DaemonTestError("socket: errno \(errno)") }
        defer { close(fd) }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { throw DaemonTestError("connect to 127.0.0.1:\(port): errno \(errno)") }
        let head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json; charset=utf-8\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let out = Array(head.utf8) + body
        var sent = 0
        while sent < out.count {
            let n = out[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw DaemonTestError("send: errno \(errno)") }
            sent += n
        }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        var headEnd: Int?, length: Int?
        // Until the body is whole by its Content-Length (chromedriver keeps the connection), or the close.
        while Date() < deadline {
            if headEnd == nil, let end = data.indices.dropLast(3).first(where: { data[$0] == 13 && data[$0 + 1] == 10 && data[$0 + 2] == 13 && data[$0 + 3] == 10 }) {
                headEnd = end
                let head = String(decoding: data[..<end], as: UTF8.self).lowercased()
                if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }) {
                    length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
                }
            }
            if let headEnd, let length, data.count >= headEnd + 4 + length { break }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw DaemonTestError("\(method) \(path): no answer in \(timeout) s (errno \(errno))")
            }
            data += buffer[0..<n]
        }
        guard let end = headEnd ?? data.indices.dropLast(3).first(where: { data[$0] == 13 && data[$0 + 1] == 10 && data[$0 + 2] == 13 && data[$0 + 3] == 10 }) else {
            throw DaemonTestError("\(method) \(path): no response head")
        }
        let headText = String(decoding: data[..<end], as: UTF8.self)
        let statusLine = headText.split(separator: "\r\n").first ?? ""
        let status = statusLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        var payload = Array(data[(end + 4)...])
        if let length, payload.count > length { payload = Array(payload.prefix(length)) }
        if headText.lowercased().contains("transfer-encoding: chunked") { payload = dechunked(payload) }
        return (status, payload)
    }

    static func dechunked(_ b: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [], i = 0
        while i < b.count {
            guard let lineEnd = b[i...].firstIndex(of: 13), let size = Int(String(decoding: b[i..<lineEnd], as: UTF8.self)
                .split(separator: ";")[0].trimmingCharacters(in: .whitespaces), radix: 16), size > 0 else { break }
            let start = lineEnd + 2
            out += b[start..<min(b.count, start + size)]
            i = start + size + 2
        }
        return out
    }
}

/// One headless Chromium (a WebDriver session).
struct Browser {
    let driver: ChromeDriver
    let session: String
    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    func navigate(_ url: String) throws { try driver.request("POST", "/session/\(session)/url", ["url": url]) }

    /// Runs `script` (a function body; `arguments` as its arguments) and returns its value.
    @discardableResult
    func run(_ script: String, _ arguments: [Any] = []) throws -> Any? {
        let answer = try driver.request("POST", "/session/\(session)/execute/sync", ["script": script, "args": arguments])
        let value = (answer as? [String: Any])?["value"]
        return value is NSNull ? nil : value
    }

    /// The element `css` selects (its WebDriver reference).
    func element(_ css: String) throws -> [String: String] {
        let answer = try driver.request("POST", "/session/\(session)/element", ["using": "css selector", "value": css])
        guard let v = (answer as? [String: Any])?["value"] as? [String: Any], let id = v[Self.elementKey] as? String else {
            throw DaemonTestError("no element \(css): \(answer)")
        }
        return [Self.elementKey: id]
    }

    /// Performs input actions (the W3C Actions API): real pointer and key events in the page.
    func perform(_ sources: [[String: Any]]) throws {
        try driver.request("POST", "/session/\(session)/actions", ["actions": sources])
    }

    /// A mouse source of `steps`.
    static func mouse(_ steps: [[String: Any]]) -> [String: Any] {
        ["type": "pointer", "id": "mouse", "parameters": ["pointerType": "mouse"], "actions": steps]
    }

    /// A key source of `steps`.
    static func keys(_ steps: [[String: Any]]) -> [String: Any] { ["type": "key", "id": "keyboard", "actions": steps] }

    /// A PNG of the viewport.
    func screenshot() throws -> Data {
        let answer = try driver.request("GET", "/session/\(session)/screenshot")
        guard let b64 = (answer as? [String: Any])?["value"] as? String, let data = Data(base64Encoded: b64) else {
            throw DaemonTestError("no screenshot")
        }
        return data
    }

    /// Waits (bounded) until `script` returns true; false at the deadline.
    func wait(_ seconds: Double = 30, until script: String, _ arguments: [Any] = []) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try run(script, arguments) as? Bool == true { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return try run(script, arguments) as? Bool == true
    }

    /// The item texts per section as the page draws them.
    func rows() throws -> [[String]] {
        let v = try run("return [...document.querySelectorAll('ul.rows')].map(u => [...u.querySelectorAll('li.row .text')].map(t => t.textContent));")
        return (v as? [[String]]) ?? []
    }
}
#endif
