import Foundation
import ListCRDT
import ListStore
import ListSync
import ListSyncClient
import ListSyncCrypto
import ListSyncFiles
import ListSyncTCP

let deviceUsage = """
    USAGE: listsync device add NAME [--docs A,B] [--read-only] [--expires 30d] [--out FILE]
           listsync device list [--json]
           listsync device revoke NAME

    A credential per device, in place of the daemon's key (Docs/Security.md). `add` writes the
    device's credential file (mode 0600; hand it to the device, which passes --credential FILE);
    it proves only what it names: documents, read-only, an expiry. `revoke` shuts the device out:
    its open connections close within a second and it is refused afterwards. They work on the
    daemon's data folder whether or not the daemon runs.

    OPTIONS:
      --data DIR        the daemon's data folder (LISTSYNC_DATA; default ~/.listsync)
      --key-file FILE   the daemon's key (LISTSYNC_KEY_FILE; default DIR/key)
      --docs A,B        only these documents (names or ids; at most 64); the device cannot create
                        documents. Default: every document
      --read-only       subscribe and list only; every edit and create is refused
      --expires WHEN    30d, 12h, 90m, or a date (2027-01-31 or ISO 8601); default: never
      --out FILE        where to write the credential (default ./NAME.credential; never replaced)
      --json            print JSON
      -h, --help        show this help
    """

/// `listsync device add|list|revoke`.
func runDevice(_ args: [String]) throws -> Int32 {
    let o = try Options(args, values: ["--data", "--key-file", "--docs", "--expires", "--out"],
                        flags: ["--help", "--json", "--read-only"])
    if o.has("--help") || o.positional.isEmpty { print(deviceUsage); return o.has("--help") ? 0 : 2 }
    let data = o.value("--data", env: "LISTSYNC_DATA") ?? defaultDataFolder()
    let json = o.has("--json")
    let verb = o.positional[0]
    do {
        switch (verb, o.positional.count) {
        case ("add", 2): return try addDevice(o.positional[1], o, data: data, json: json)
        case ("list", 1): return try listDevices(data: data, json: json)
        case ("revoke", 2): return try revokeDevice(o.positional[1], data: data, json: json)
        default:
            throw UsageError(message: "device takes `add NAME`, `list` or `revoke NAME`, not '\(o.positional.joined(separator: " "))'")
        }
    } catch let e as UsageError {
        throw e
    } catch {
        return fail("device \(verb)", "\(error)", json: json)
    }
}

private func addDevice(_ name: String, _ o: Options, data: String, json: Bool) throws -> Int32 {
    let keyPath = o.value("--key-file", env: "LISTSYNC_KEY_FILE") ?? data + "/key"
    let key = try KeyFile.read(keyPath)
    let documents = try o.value("--docs").map { try resolveDocuments($0, data: data) }
    let expires = try o.value("--expires").map(parseExpiry)
    let claims = try DeviceClaims(id: SecureRandom.bytes(16), name: name, documents: documents,
                                  readOnly: o.has("--read-only"), expires: expires)
    let out = o.value("--out") ?? FileManager.default.currentDirectoryPath + "/\(safeFileName(name)).credential"
    let now = UInt64(Date().timeIntervalSince1970)
    try DeviceRegistry.update(dataFolder: data) { records in
        if let same = records.values.first(where: { $0.name == name && $0.revoked == nil }) {
            throw UsageError(message: "a device named '\(PrintableText.escaped(name))' exists (\(same.id)); revoke it first or choose another name")
        }
        // The file first, never replacing one: a credential in the registry that nobody holds is harmless.
        try CredentialFile.create(Credential(claims: claims, masterKey: key), at: out)
        records[claims.idText] = DeviceRecord(claims: claims, created: now)
    }
    if json {
        printJSON(["device": claims.idText, "name": name, "credential": out, "read-only": claims.readOnly,
                   "documents": claims.documents?.map(\.description) as Any, "expires": expires as Any])
    } else {
        print("""
            device '\(PrintableText.escaped(name))' added (\(claims.idText))
              credential: \(out) (mode 0600; give it to the device, keep it secret)
              documents:  \(claims.documents.map { $0.map(\.description).joined(separator: ", ") } ?? "all")
              rights:     \(claims.readOnly ? "read-only" : "read and write")
              expires:    \(expires.map { ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double($0))) } ?? "never")
            on the device:
              listsync sync --replica DIR --credential \(out) --daemon HOST:PORT \(claims.documents?.first?.description ?? "DOC")
              (one sync with each document to fetch; later syncs need no DOC)
            """)
    }
    return 0
}

private func listDevices(data: String, json: Bool) throws -> Int32 {
    let rows = try DeviceRegistry.read(dataFolder: data).values.sorted { ($0.created, $0.id) < ($1.created, $1.id) }
    let now = UInt64(Date().timeIntervalSince1970)
    func state(_ r: DeviceRecord) -> String {
        if r.revoked != nil { return "revoked" }
        if let e = r.expires, now >= e { return "expired" }
        return "active"
    }
    if json {
        printJSON(["devices": rows.map { r -> [String: Any] in
            ["id": r.id, "name": r.name, "state": state(r), "read-only": r.readOnly,
             "documents": r.documents as Any, "expires": r.expires as Any, "created": r.created, "revoked": r.revoked as Any]
        }])
        return 0
    }
    guard !rows.isEmpty else { print("no devices; add one with `listsync device add NAME`"); return 0 }
    let date = { (t: UInt64) in ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(t))) }
    for r in rows {
        let docs = r.documents.map { "\($0.count) document(s)" } ?? "all documents"
        print("\(PrintableText.escaped(r.name))  \(r.id)  \(state(r))  \(r.readOnly ? "read-only" : "read-write")  \(docs)  expires \(r.expires.map(date) ?? "never")")
    }
    return 0
}

private func revokeDevice(_ which: String, data: String, json: Bool) throws -> Int32 {
    let now = UInt64(Date().timeIntervalSince1970)
    let revoked = try DeviceRegistry.update(dataFolder: data) { records -> DeviceRecord in
        let matches = records.values.filter { ($0.name == which || $0.id == which.lowercased()) && $0.revoked == nil }
        guard matches.count == 1, var r = matches.first else {
            throw UsageError(message: matches.isEmpty ? "no active device named '\(PrintableText.escaped(which))'; see `listsync device list`"
                             : "\(matches.count) devices match '\(PrintableText.escaped(which))'; name one by its id")
        }
        r.revoked = now
        records[r.id] = r
        return r
    }
    if json {
        printJSON(["device": revoked.id, "name": revoked.name, "revoked": now])
    } else {
        print("device '\(PrintableText.escaped(revoked.name))' (\(revoked.id)) revoked: a running daemon closes its connections within a second")
    }
    return 0
}

/// Document names or ids → ids, from the data folder's document names (read without its lock:
/// the daemon may be running; names do not change).
private func resolveDocuments(_ text: String, data: String) throws -> [DocumentID] {
    let entries = (try? DataFolder.entries(root: data)) ?? []
    let infos = entries.map { DocumentInfo(id: $0.id, name: $0.name, epoch: 0, operations: 0) }
    var ids: [DocumentID] = []
    for part in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !part.isEmpty {
        do { ids.append(try DocumentInfo.resolve(part, in: infos).id) } catch {
            throw UsageError(message: "--docs: no single document '\(PrintableText.escaped(part))' in \(data) (\(entries.count) there; see `listsync docs`)")
        }
    }
    guard !ids.isEmpty else { throw UsageError(message: "--docs needs at least one document") }
    guard ids.count <= DeviceClaims.maxDocuments else {
        throw UsageError(message: "--docs names \(ids.count) documents; a credential names at most \(DeviceClaims.maxDocuments)")
    }
    return Array(Set(ids)).sorted()
}

/// `30d`, `12h`, `90m`, `2027-01-31` or an ISO 8601 time → seconds since 1970.
func parseExpiry(_ text: String) throws -> UInt64 {
    let now = Date().timeIntervalSince1970
    if let unit = text.last, let n = Double(text.dropLast()), n > 0 {
        let seconds: Double? = ["d": 86_400, "h": 3_600, "m": 60, "s": 1][String(unit)]
        if let seconds { return UInt64(now + n * seconds) }
    }
    let iso = ISO8601DateFormatter()
    if let d = iso.date(from: text) ?? iso.date(from: text + "T00:00:00Z"), d.timeIntervalSince1970 > now {
        return UInt64(d.timeIntervalSince1970)
    }
    throw UsageError(message: "--expires must be like 30d, 12h, 90m or a future date (2027-01-31), not '\(text)'")
}

/// A device name as a file name: letters, digits, `-`, `_` and `.`; the rest becomes `_`.
private func safeFileName(_ name: String) -> String {
    let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
    let s = String(name.map { allowed.contains($0) ? $0 : "_" })
    return s.hasPrefix(".") ? "_" + s : s
}
