import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListStore
import ListSyncCrypto
import ListSyncServer
import ListSyncFiles
import ListSyncTCP
import ListSyncWeb
import Synchronization

/// The web view's address file in the data folder: where `listsync open` finds it.
func webAddressPath(_ dataFolder: String) -> String { dataFolder + "/web-address" }

/// `--web PORT` or `--web HOST:PORT` (loopback unless a host is given).
func parseWebAddress(_ text: String) throws -> (String, UInt16) {
    if let p = UInt16(text) { return ("127.0.0.1", p) }
    return try parseAddress(text, what: "--web")
}

/// Starts the web view of a started daemon (`serve --web`), and writes its address where
/// `listsync open` looks for it.
func startWeb(host: String, port: UInt16, daemon: Daemon, dataFolder: String, log: @escaping @Sendable (String, [String: String]) -> Void) async throws -> WebView {
    let key = try KeyFile.read(daemon.keyPath)
    guard let address = await daemon.address else { throw UsageError(message: "the daemon is not listening") }
    // The web view is a client of the daemon's own port: on a wildcard address, over loopback.
    let daemonHost = address.isLoopback ? address.hostText : "127.0.0.1"
    var configuration = WebViewConfiguration(host: host, port: port, daemonHost: daemonHost, daemonPort: address.port,
                                             masterKey: key, dataFolder: dataFolder, log: log)
    configuration.logUsage = { daemon.storageUsage($0) }
    let view = try await WebView.start(configuration)
    if let bound = await view.address {
        // Mode 0600 from its first instant, as every file of the data folder (Foundation's atomic
        // write made it 0644).
        try? FileSystem.system.writeAtomically(Array("\(bound)\n".utf8), to: webAddressPath(dataFolder), folder: dataFolder)
    }
    return view
}

let openCommand = ClientCommand(
    usage: usageText("open [DOC] [--web HOST:PORT] [--no-browser] [options]", """
        Prints a one-time login link to the daemon's web view (`listsync serve --web`), for the list DOC \
        or for the list of documents, and opens it in the browser where a desktop is running. The link \
        works once, for 2 minutes; it is signed with the key or with this device's credential, and the \
        browser gets what that credential allows (its documents, read-only, revocation).
        """, extra: """
          --web HOST:PORT      the web view (LISTSYNC_WEB; default the address in DIR/web-address of --data)
          --no-browser         print the link only

        """),
    values: ["--web"], flags: ["--no-browser"], arguments: 0...1, onReplica: false
) { o, client, json in
    let dataFolder = o.value("--data", env: "LISTSYNC_DATA") ?? defaultDataFolder()
    let web: String
    if let given = o.value("--web", env: "LISTSYNC_WEB") {
        let (h, p) = try parseWebAddress(given)
        web = h.contains(":") ? "[\(h)]:\(p)" : "\(h):\(p)"
    } else if let text = try? String(contentsOfFile: webAddressPath(dataFolder), encoding: .utf8) {
        web = text.trimmingCharacters(in: .whitespacesAndNewlines)
    } else {
        throw UsageError(message: "no web view known: start the daemon with `listsync serve --web 127.0.0.1:7460`, or pass --web HOST:PORT")
    }
    var document: DocumentInfo?
    if let text = o.positional.first { document = try await client.resolve(text) }
    let token = WebLoginToken(authentication: try clientAuthentication(o), document: document?.id,
                              now: UInt64(Date().timeIntervalSince1970))
    let host = web.hasPrefix("0.0.0.0:") ? "127.0.0.1:" + web.dropFirst(8) : web
    let url = "http://\(host)/login?t=\(token.text)"
    if json {
        printJSON(["url": url, "expires": token.expires, "document": document?.id.description ?? ""])
    } else {
        print("Open this link within \(WebLoginToken.lifetime / 60) minutes; it works once:\n  \(url)")
    }
    fflush(nil)
    let env = ProcessInfo.processInfo.environment
    if !o.has("--no-browser"), (env["DISPLAY"]?.isEmpty == false || env["WAYLAND_DISPLAY"]?.isEmpty == false) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["xdg-open", url]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try? p.run()
    }
    return 0
}

/// The running web view, set once it started (read by the signal handler to stop it first).
final class WebViewHolder: Sendable {
    private let view = Mutex<WebView?>(nil)
    func set(_ v: WebView) { view.withLock { $0 = v } }
    var current: WebView? { view.withLock { $0 } }
}
