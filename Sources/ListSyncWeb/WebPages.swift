import Foundation
import ListCRDT
import ListSyncHTTP

/// The web view's HTML pages and its fixed responses. Pages are a shell: the script
/// (``WebAssets/script``) fills them from the API; nothing a user typed is put in HTML here.
enum WebPages {
    /// Which page.
    enum Kind {
        case documents
        case document(DocumentID)
        case status
    }

    /// Headers on every response (Docs/Web.md, "Security notes"): scripts, styles and fetches
    /// from this server only, no framing, no referrer (a login link never leaks), no sniffing.
    static let securityHeaders: [(name: String, value: String)] = [
        ("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
            + "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
    ]

    static func page(_ kind: Kind, session: WebSession) -> HTTPResponse {
        let (name, doc, title): (String, String, String)
        switch kind {
        case .documents: (name, doc, title) = ("documents", "", "Lists")
        case let .document(id): (name, doc, title) = ("document", id.description, "List")
        case .status: (name, doc, title) = ("status", "", "Status")
        }
        let who = session.claims.map { "device " + $0.name } ?? "operator"
        let html = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="csrf" content="\(escaped(session.csrf))">
            <title>\(escaped(title)) · ListSync</title>
            <link rel="stylesheet" href="/app.css">
            <script src="/app.js" defer></script>
            </head>
            <body data-page="\(name)" data-doc="\(escaped(doc))" data-who="\(escaped(who))">
            <header>
            <nav><a href="/">Lists</a><a href="/status">Status</a></nav>
            <span id="who"></span>
            <button id="logout" type="button">Sign out</button>
            </header>
            <div id="banner" role="alert" hidden></div>
            <h1 id="title">\(escaped(title))</h1>
            <main id="main"></main>
            <div id="live" class="sr" aria-live="polite"></div>
            </body>
            </html>
            """
        return HTTPResponse(status: 200, text: html, contentType: "text/html; charset=utf-8", headers: [("Cache-Control", "no-store")])
    }

    /// The page for a browser without a session: what to run, and nothing else.
    static func signedOut() -> HTTPResponse {
        let html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>ListSync</title><link rel="stylesheet" href="/app.css"></head>
            <body data-page="signed-out"><h1>ListSync</h1>
            <p id="signed-out">No session. Open the web view with a one-time link: run <code>listsync open</code> (or
            <code>listsync open DOC</code>) on a machine that holds the daemon's key or a device credential.</p>
            </body></html>
            """
        return HTTPResponse(status: 401, text: html, contentType: "text/html; charset=utf-8", headers: [("Cache-Control", "no-store")])
    }

    static func problem(_ status: Int, _ text: String) -> HTTPResponse {
        let html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>ListSync</title><link rel="stylesheet" href="/app.css"></head>
            <body data-page="problem"><h1>ListSync</h1><p id="problem">\(escaped(text))</p></body></html>
            """
        return HTTPResponse(status: status, text: html, contentType: "text/html; charset=utf-8", headers: [("Cache-Control", "no-store")])
    }

    static func asset(_ text: String, type: String) -> HTTPResponse {
        HTTPResponse(status: 200, text: text, contentType: type, headers: [("Cache-Control", "no-cache")])
    }

    static func json(_ status: Int, _ object: [String: Any]) -> HTTPResponse {
        HTTPResponse(status: status, text: WebModel.json(object), contentType: "application/json", headers: [("Cache-Control", "no-store")])
    }

    /// `text` with `& < > " '` as entities.
    static func escaped(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }
}
