import Foundation
import ListCRDT
import ListSync
import ListSyncClient
import ListStore
import ListSyncFiles
import ListSyncTCP
import ListTable
import Synchronization

/// One client command: its usage, its own options, and what it does with a connected client.
struct ClientCommand: Sendable {
    var usage: String
    var values: Set<String> = []
    var flags: Set<String> = []
    var arguments: ClosedRange<Int>
    /// Whether the command works on a device copy (`--replica DIR`) without a daemon.
    var onReplica = true
    /// Checks made before connecting (a usage error exits 2 with nothing done).
    var check: (@Sendable (Options) throws -> Void)? = nil
    var run: @Sendable (Options, any CommandClient, Bool) async throws -> Int32
}

let commonClientOptions = """
      --daemon HOST:PORT   the daemon (LISTSYNC_DAEMON; default 127.0.0.1:\(defaultPort)); several,
                           comma-separated (cluster nodes): the first that answers
      --key-file FILE      the key (LISTSYNC_KEY_FILE; default DIR/key of --data)
      --data DIR           the daemon's data folder, for its key (LISTSYNC_DATA; default ~/.listsync)
      --credential FILE    this device's credential instead of the key (LISTSYNC_CREDENTIAL;
                           from `listsync device add`)
      --replica DIR        work on this device's copy in DIR, with no daemon (LISTSYNC_REPLICA);
                           `listsync sync --replica DIR` exchanges it with the daemon
      --json               print JSON instead of text
      -h, --help           show this help
    """

func usageText(_ synopsis: String, _ what: String, extra: String = "") -> String {
    "USAGE: listsync \(synopsis)\n\n\(what)\n\nOPTIONS:\n\(extra)\(commonClientOptions)"
}

/// `docs`' `--count N` (with `--follow` only), or nil.
func followCount(_ o: Options) throws -> Int? {
    if o.value("--count") != nil, !o.has("--follow") { throw UsageError(message: "--count goes with --follow") }
    return try countOption(o)
}

/// `--count N` (`watch`, `docs --follow`): a positive number, or nil.
func countOption(_ o: Options) throws -> Int? {
    try o.value("--count").map { t -> Int in
        guard let n = Int(t), n > 0 else { throw UsageError(message: "--count must be a positive number, not '\(t)'") }
        return n
    }
}

/// `move`'s FROM and TO: both items or both sections.
func movePaths(_ o: Options) throws -> (PathArgument, PathArgument) {
    let from = try PathArgument(o.positional[1]), to = try PathArgument(o.positional[2])
    switch (from, to) {
    case (.section, .section), (.item, .item): return (from, to)
    default: throw UsageError(message: "FROM and TO must both be items (S.I) or both sections (S)")
    }
}

/// `HOST:PORT[,HOST:PORT…]`: several daemons (cluster nodes, Docs/Cluster.md), tried in order.
func parseAddressList(_ text: String, what: String) throws -> [(String, UInt16)] {
    let parts = text.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    guard !parts.isEmpty else { throw UsageError(message: "\(what) needs HOST:PORT") }
    return try parts.map { try parseAddress($0, what: what) }
}

/// Connects to the first of `addresses` that answers (a node down: the next one).
///
/// - Throws: the last address's error when none answers.
func connectToFirst(_ addresses: [(String, UInt16)], authentication: ClientAuthentication,
                    changeSets: Bool = true) async throws -> DaemonClient {
    precondition(!addresses.isEmpty)
    var last: (any Error)?
    for (host, port) in addresses {
        do {
            return try await DaemonClient.connect(host: host, port: port, authentication: authentication, changeSets: changeSets)
        } catch { last = error }
    }
    throw last!
}

/// Runs a client command: parses, finds the daemon and the key, connects, runs, reports errors.
func runClient(_ name: String, _ command: ClientCommand, _ args: [String]) throws -> Int32 {
    let o = try Options(args, values: command.values.union(["--daemon", "--key-file", "--data", "--replica", "--credential"]),
                        flags: command.flags.union(["--help", "--json"]))
    if o.has("--help") { print(command.usage); return 0 }
    guard command.arguments.contains(o.positional.count) else {
        throw UsageError(message: "\(name) takes \(command.arguments.lowerBound == command.arguments.upperBound ? "\(command.arguments.lowerBound)" : "\(command.arguments.lowerBound) to \(command.arguments.upperBound)") argument(s), not \(o.positional.count)")
    }
    try command.check?(o)
    if let folder = o.value("--replica", env: "LISTSYNC_REPLICA") {
        guard command.onReplica else { throw UsageError(message: "\(name) needs the daemon; it does not work on a --replica copy") }
        return runOnReplica(name, command, o, folder: folder)
    }
    let addresses = try parseAddressList(o.value("--daemon", env: "LISTSYNC_DAEMON") ?? "127.0.0.1:\(defaultPort)", what: "--daemon")
    let json = o.has("--json")
    let authentication: ClientAuthentication
    do { authentication = try clientAuthentication(o) } catch {
        return fail(name, "\(error)", json: json)
    }
    // This client's kept replica id (nil: every slot held or the folder unusable; a random id).
    let slot = try? ClientReplica.acquire(folder: (o.value("--data", env: "LISTSYNC_DATA") ?? defaultDataFolder()) + "/clients")
    // The slot's kept copies (under the slot's lock): a command catches up from the last one's.
    let cache = slot.flatMap { try? ClientCache(for: $0) }
    // Only `watch` shows change sets; the other commands need none (no diff of the list).
    let changeSets = name == "watch"
    return blockOn(name, json: json) {
        var renewed = false, refetched = false, followsFloors = true
        while true {
            let daemon = try await connectToFirst(addresses, authentication: authentication, changeSets: changeSets)
            var client = OnlineClient(daemon: daemon, slot: slot, cache: cache)
            client.followsFloors = followsFloors
            do {
                let code = try await command.run(o, client, json)
                await daemon.close()
                return code
            } catch is OnlineClient.ReplicaBehind where !renewed {
                // Nothing was sent yet (the check comes at open): again, as a fresh id.
                await daemon.close()
                try slot?.renew()
                renewed = true
            } catch is OnlineClient.CopyBehindFloor where !refetched {
                // Nothing was sent yet: again, the copy fetched afresh.
                await daemon.close()
                refetched = true
            } catch {
                let older = await daemon.refusedLiveCopy
                await daemon.close()
                // A daemon of an older build closed the connection on the kept copy's role:
                // again, the copy only caught up.
                guard followsFloors, older else { throw error }
                followsFloors = false
            }
        }
    }
}

/// What a client command proves to the daemon: `--credential FILE` (a device's), else the key
/// of `--key-file` or of the data folder.
func clientAuthentication(_ o: Options) throws -> ClientAuthentication {
    if let path = o.value("--credential", env: "LISTSYNC_CREDENTIAL") {
        return .credential(try CredentialFile.read(path))
    }
    let keyPath = o.value("--key-file", env: "LISTSYNC_KEY_FILE")
        ?? (o.value("--data", env: "LISTSYNC_DATA") ?? defaultDataFolder()) + "/key"
    return .key(try KeyFile.read(keyPath))
}

/// Runs a client command on the device copy in `folder` (no daemon, no key).
func runOnReplica(_ name: String, _ command: ClientCommand, _ o: Options, folder: String) -> Int32 {
    let json = o.has("--json")
    return blockOn(name, json: json) {
        let client = try SyncClient(folder: folder, server: nil)
        do {
            let code = try await command.run(o, ReplicaClient(client: client, folder: folder), json)
            await client.close()
            return code
        } catch {
            await client.close()
            throw error
        }
    }
}

/// Runs `body` on the cooperative pool and waits for it; an error is printed as the command's.
func blockOn(_ name: String, json: Bool, _ body: @escaping @Sendable () async throws -> Int32) -> Int32 {
    let result = Mutex<Int32>(1)
    let done = DispatchSemaphore(value: 0)
    Task {
        defer { done.signal() }
        do {
            let code = try await body()
            result.withLock { $0 = code }
        } catch {
            result.withLock { $0 = fail(name, describe(error), json: json) }
        }
    }
    done.wait()
    // The command printed on another thread: flush before `exit`.
    fflush(nil)
    return result.withLock { $0 }
}

/// Prints an error (as `{"error": ...}` with --json) and returns the exit code 1.
func fail(_ command: String, _ message: String, json: Bool) -> Int32 {
    if json { printJSON(["error": message]) } else { printError("listsync \(command): \(PrintableText.escaped(message))") }
    return 1
}

func describe(_ error: any Error) -> String {
    if let e = error as? UsageError { return e.message }
    return "\(error)"
}

/// Prints `object` as JSON, every control character in its strings escaped (Docs/Security.md, "Output").
/// Prints `object` as JSON: indented, or on one line (`line`: a stream of JSON lines).
func printJSON(_ object: Any, line: Bool = false) {
    let options: JSONSerialization.WritingOptions = line ? [.sortedKeys] : [.sortedKeys, .prettyPrinted]
    let data = (try? JSONSerialization.data(withJSONObject: object, options: options)) ?? Data("{}".utf8)
    print(PrintableText.escapedJSON(String(decoding: data, as: UTF8.self)))
}

/// A value's bytes as text (for JSON: escaped when printed).
func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

/// Text someone else chose (a name, a section's or an item's text), as it may reach the terminal.
func shown(_ text: String) -> String { PrintableText.escaped(text) }

/// A value's bytes as text, as it may reach the terminal.
func shown(_ data: Data) -> String { PrintableText.escaped(text(data)) }

/// The document as JSON-ready values.
func documentObject(_ info: DocumentInfo, _ snapshot: ListSnapshot) -> [String: Any] {
    [
        "id": info.id.description, "name": info.name,
        "sections": snapshot.sections.map { s in
            ["id": "\(s.id)", "text": text(s.value), "fields": fieldsObject(s.fields),
             "items": s.items.map { ["id": "\($0.id)", "text": text($0.value), "fields": fieldsObject($0.fields)] }] as [String: Any]
        },
    ]
}

/// The document as a table: one line per section, then its items with their index paths.
func documentTable(_ info: DocumentInfo, _ snapshot: ListSnapshot) -> String {
    var lines = ["\(shown(info.name))  (\(info.id))"]
    if snapshot.sections.isEmpty { lines.append("  (no sections)") }
    for (s, section) in snapshot.sections.enumerated() {
        lines.append("[\(s)] \(section.value.isEmpty ? "(untitled)" : shown(section.value))")
        if !section.fields.isEmpty { lines.append("      " + fieldsLine(section.fields)) }
        if section.items.isEmpty { lines.append("      (empty)") }
        for (i, item) in section.items.enumerated() {
            lines.append(String(format: "  %-6@ %@", "\(s).\(i)" as NSString, shown(item.value) as NSString))
            if !item.fields.isEmpty { lines.append("         " + fieldsLine(item.fields)) }
        }
    }
    return lines.joined(separator: "\n")
}

/// Opens the document named by the command's first argument.
func openDocument(_ o: Options, _ client: any CommandClient) async throws -> (DocumentInfo, LiveDocument) {
    let info = try await client.resolve(o.positional[0])
    return (info, try await client.open(info.id))
}

/// Runs an edit and prints the result. `check` first looks at the document as it is: it throws
/// when a path names a section that does not exist, and returns what to say when the edit would
/// change nothing (then nothing is edited or sent).
func editCommand(_ o: Options, _ client: any CommandClient, json: Bool, verb: String,
                 check: (ListSnapshot) throws -> String? = { _ in nil },
                 _ body: @escaping @Sendable (inout ListDocument) throws(ListError) -> String) async throws -> Int32 {
    let (info, live) = try await openDocument(o, client)
    if let unchanged = try check(live.snapshot) {
        if json { printJSON(["document": info.id.description, "done": "nothing", "changed": false, "what": unchanged]) } else {
            print("nothing changed in \(shown(info.name)): \(unchanged)")
        }
        return 0
    }
    let (what, saved) = try await client.edit(info.id, body)
    if json { printJSON(saved.json.merging(["document": info.id.description, "done": verb, "what": what]) { a, _ in a }) } else {
        print("\(verb) \(what) in \(shown(info.name)) (\(saved.text))")
    }
    return 0
}

let clientCommands: [String: ClientCommand] = [
    "set": setCommand,
    "text": textCommand,   // Text.swift
    "status": ClientCommand(
        usage: usageText("status [options]", "Prints the daemon's status: address, documents (on disk and resident), connections, peers, the event loop's poller (epoll, kqueue or poll), operations in and out, fsync latency, bytes on disk, RSS and its limits; then each document in memory with its operations and the bytes a compaction would free of its bytes (reclaimable_bytes, document_bytes)."),
        arguments: 0...0
    ) { _, client, json in
        let status = try await client.status()
        if json { print(PrintableText.escapedJSON(status)); return 0 }
        guard let object = try JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any] else { print(status); return 0 }
        for k in object.keys.sorted() where !(object[k] is [Any]) && !(object[k] is [String: Any]) {
            print("\(k): \(shown("\(object[k]!)"))")
        }
        if let limits = object["limits"] as? [String: Any] {
            print("limits: " + limits.keys.sorted().map { "\($0)=\(shown("\(limits[$0]!)"))" }.joined(separator: " "))
        }
        if let peers = object["peers"] as? [[String: Any]], !peers.isEmpty {
            print("peers: " + peers.map { "\(shown("\($0["address"] ?? "?")"))\(($0["connected"] as? Bool) == true ? " (connected)" : " (down)")" }.joined(separator: ", "))
        }
        // Each document in memory: its operations since its floor, and what a compaction would free.
        for d in (object["resident"] as? [[String: Any]] ?? []).sorted(by: { "\($0["id"] ?? "")" < "\($1["id"] ?? "")" }) {
            print("document \(shown("\(d["id"] ?? "?")")) \(shown("\(d["name"] ?? "")")): \(d["operations"] ?? 0) operations, "
                  + "\(d["reclaimable_bytes"] ?? 0) of \(d["document_bytes"] ?? 0) bytes reclaimable")
        }
        return 0
    },
    "docs": ClientCommand(
        usage: usageText("docs [--follow [--count N]] [options]", """
            Lists the daemon's documents: id, name (and operations, for documents in memory). With --follow, \
            then prints each change to the list as it happens (made, renamed, destroyed, by anyone) until \
            interrupted, or after N changes. With --json: JSON lines, the list first.
            """, extra: "  --follow             keep printing the list's changes\n  --count N            with --follow: stop after N changes\n"),
        values: ["--count"], flags: ["--follow"], arguments: 0...0,
        check: { o in
            _ = try followCount(o)
            if o.has("--follow"), o.value("--replica", env: "LISTSYNC_REPLICA") != nil {
                throw UsageError(message: "--follow needs a daemon, not --replica")
            }
        }
    ) { o, client, json in
        let follow = o.has("--follow")
        let limit = try followCount(o)
        var daemon: DaemonClient?
        if follow {
            guard let online = client as? OnlineClient else { throw UsageError(message: "--follow needs a daemon, not --replica") }
            daemon = online.daemon
        }
        // Following from before the listing: a change made between the two is not missed.
        let changes = await daemon?.documentListChanges()
        let docs = try await client.documents()
        if json {
            // Following: JSON lines, the list first.
            printJSON(docs.map { ["id": $0.id.description, "name": $0.name, "operations": $0.operations] as [String: Any] }, line: follow)
        } else if docs.isEmpty {
            print(follow ? "no documents yet; following" : "no documents yet: `listsync create NAME` makes one")
        } else {
            for d in docs { print("\(d.id)  \(shown(d.name))") }
        }
        guard let changes, let daemon else { return 0 }
        fflush(nil)
        var known = Set(docs.map(\.id)), seen = 0
        for await change in changes {
            switch change {
            case let .changed(info):
                let event = known.insert(info.id).inserted ? "created" : "renamed"
                if json { printJSON(["event": event, "id": info.id.description, "name": info.name], line: true) } else { print("\(event)  \(info.id)  \(shown(info.name))") }
            case let .destroyed(id, _):
                known.remove(id)
                if json { printJSON(["event": "destroyed", "id": id.description], line: true) } else { print("destroyed  \(id)") }
            }
            fflush(nil)
            seen += 1
            if let limit, seen >= limit { await daemon.close(); return 0 }
        }
        let reason = await daemon.endReason ?? "closed"
        return fail("docs", "the daemon ended the connection: \(reason)", json: json)
    },
    "create": ClientCommand(
        usage: usageText("create NAME [--sections A,B,...] [options]", "Creates a list named NAME with one untitled section, or with the sections --sections names, and prints its id.",
                         extra: "  --sections A,B,...   the sections to start with (comma-separated)\n"),
        values: ["--sections"], arguments: 1...1
    ) { o, client, json in
        let sections = o.value("--sections").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) } ?? [""]
        let id = try await client.create(name: o.positional[0], sections: sections)
        if json { printJSON(["id": id.description, "name": o.positional[0], "sections": sections]) } else { print(id) }
        return 0
    },
    "show": ClientCommand(
        usage: usageText("show DOC [options]", "Prints the document (by id, id prefix or name) as a table: sections and their items with index paths."),
        arguments: 1...1
    ) { o, client, json in
        let (info, live) = try await openDocument(o, client)
        if json {
            // Written as it is made: a large list is not built as a tree of objects first.
            var out = StreamedOutput(fd: 1)
            writeDocumentJSON(info, live.snapshot, to: &out)
            if let e = out.failure { throw UsageError(message: "cannot write the output: \(String(cString: strerror(e)))") }
        } else {
            print(documentTable(info, live.snapshot))
        }
        return 0
    },
    "watch": ClientCommand(
        usage: usageText("watch DOC [--count N] [options]", "Prints the document, then each change as it arrives from any device, and the other devices' drags as they happen (presence: phone drags \"milk\" to 1.0), until interrupted (or after N changes; drags do not count).",
                         extra: "  --count N            stop after N changes\n"),
        values: ["--count"], arguments: 1...1, onReplica: false,
        check: { o in _ = try countOption(o) }
    ) { o, client, json in
        let limit = try countOption(o)
        let (info, live) = try await openDocument(o, client)
        let changes = live.changes()
        let presence = live.presenceChanges()
        // Taking part (idle) makes the daemon relay the others' drags to this watch.
        try await (client as? OnlineClient)?.daemon.publishPresence(info.id, .idle, as: "watch")
        if json { printJSON(documentObject(info, live.snapshot)) } else { print(documentTable(info, live.snapshot)); print("watching; Ctrl-C to stop") }
        fflush(nil)
        // Until N changes, or until the daemon ends the connection (a revoked credential, a stop).
        return await withTaskGroup(of: String?.self) { group in
            group.addTask {
                var seen = 0
                for await change in changes {
                    let snapshot = live.snapshot
                    let lines = describeChange(change, snapshot)
                    if json {
                        printJSON(["changes": lines, "document": documentObject(info, snapshot)])
                    } else {
                        for l in lines { print(l) }
                    }
                    fflush(nil)
                    seen += 1
                    if let limit, seen >= limit { break }
                }
                return nil
            }
            group.addTask {
                // The others' drags as they happen; they do not count as changes.
                var shownNow: [ReplicaID: RemoteActivity] = [:]
                for await activities in presence {
                    for entry in describePresence(activities, since: shownNow, live.snapshot) {
                        if json { printJSON(entry.json) } else { print(entry.text) }
                    }
                    fflush(nil)
                    shownNow = Dictionary(activities.map { ($0.replica, $0) }, uniquingKeysWith: { a, _ in a })
                }
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
                return nil
            }
            if let daemon = (client as? OnlineClient)?.daemon {
                group.addTask { await daemon.waitUntilClosed() }
                group.addTask {
                    // The document destroyed (or reset) on the daemon: its subscription ended.
                    if let why = await daemon.waitUntilEnded(info.id) { return why }
                    while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
                    return nil
                }
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            // The count was reached, or the document ended: closing ends the wait for the close
            // (a wait that cancelling does not end). Closed already: nothing more happens.
            if let daemon = (client as? OnlineClient)?.daemon { await daemon.close() }
            guard let reason = first else { return 0 }
            return fail("watch", "the daemon ended the watch: \(reason)", json: json)
        }
    },
    "destroy": ClientCommand(
        usage: usageText("destroy DOC [--yes] [options]", """
            Destroys the document DOC (by id, id prefix or name) on the daemon: it is gone from `docs`, its \
            files are removed from the data folder, whoever watches or syncs it is told, and its id is refused \
            from then on, on the daemon and on its peers (a copy elsewhere does not bring it back). Needs the \
            daemon's key. On a terminal it asks you to type the document's name; scripts pass --yes. With \
            --replica DIR it removes this device's copy only (set aside if it has unsent edits); the daemon's \
            copy is untouched. (To delete an item, see `listsync delete DOC PATH`.)
            """, extra: "  --yes                destroy without asking (needed when stdin is not a terminal)\n"),
        flags: ["--yes"], arguments: 1...1,
        check: { o in
            guard o.has("--yes") || isatty(0) == 1 else {
                throw UsageError(message: "destroy asks for confirmation, and stdin is not a terminal: nothing was destroyed; pass --yes to destroy \(o.positional.first.map { "\"\($0)\"" } ?? "the document") without asking")
            }
        }
    ) { o, client, json in
        let info = try await client.resolve(o.positional[0])
        if !o.has("--yes") {
            let live = try await client.open(info.id)
            let items = live.document.totalItemCount
            let question = "Destroy list \"\(shown(info.name))\" (id \(info.id), \(items) item\(items == 1 ? "" : "s"))\(client is ReplicaClient ? " on this device" : "")? Type its name to confirm: "
            FileHandle.standardError.write(Data(question.utf8))
            guard let answer = readLine(strippingNewline: true), answer == info.name else {
                return fail("destroy", "not destroyed: the name typed was not \"\(info.name)\"", json: json)
            }
        }
        let done = try await client.destroy(info)
        if json { printJSON(done.json) } else { print(done.text) }
        return 0
    },
    "insert": ClientCommand(
        usage: usageText("insert DOC PATH TEXT [NAME=VALUE ...] [options]\n       listsync insert DOC PATH NAME=VALUE [NAME=VALUE ...] [options]\n       listsync insert DOC PATH --value-file FILE [NAME=VALUE ...] [options]", """
            Inserts an item with TEXT at PATH (0.3: row 3 of section 0), or a section at PATH when PATH is one \
            number. NAME=VALUE arguments (NAME of letters, digits and _) and the field options write the new \
            item's or section's fields, read as `listsync set` reads them; the insert and its fields are one \
            operation (a section's needs a daemon of sync protocol version 6). A TEXT that itself looks like \
            NAME=VALUE is given with --value-file.
            """, extra: valueFileHelp + fieldOptionsHelp),
        values: fieldOptionNames.union(["--value-file"]), arguments: 2...(3 + FieldLimits.maxWrites),
        check: { o in
            _ = try PathArgument(o.positional[1])
            let (hasText, assignments) = insertArguments(o)
            _ = try fieldChanges(assignments, o)
            if hasText || o.value("--value-file") != nil { try checkValueSource(o, command: "insert", textAt: hasText ? 2 : o.positional.count) }
            else if assignments.isEmpty && !fieldOptionNames.contains(where: { !o.all($0).isEmpty }) {
                throw UsageError(message: "insert needs TEXT, NAME=VALUE fields, or --value-file FILE (- for standard input)")
            }
        }
    ) { o, client, json in
        let path = try PathArgument(o.positional[1])
        let (hasText, assignments) = insertArguments(o)
        let value = hasText || o.value("--value-file") != nil ? try editValue(o, textAt: 2) : Data()
        let changes = try fieldChanges(assignments, o)
        return try await editCommand(o, client, json: json, verb: "inserted",
                                     check: { try checkExists(path, in: $0, inserting: true); return nil }) { doc throws(ListError) in
            switch path {
            case let .section(s):
                try doc.insertSection(at: s, value: value, fields: changes)   // one operation with its fields
            case let .item(p):
                try doc.insertItem(at: p, value: value, fields: changes)   // one operation with its fields
            }
            return path.text
        }
    },
    "move": ClientCommand(
        usage: usageText("move DOC FROM TO [options]", "Moves the item at FROM to TO, with exactly the meaning of tableView(_:moveRowAt:to:) (0.3 1.0: row 3 of section 0 to the top of section 1); or a section, when both are single numbers."),
        arguments: 3...3,
        check: { o in _ = try movePaths(o) }
    ) { o, client, json in
        let (from, to) = try movePaths(o)
        let check = { (snapshot: ListSnapshot) throws -> String? in
            try checkExists(from, in: snapshot)
            try checkExists(to, in: snapshot)
            guard from == to else { return nil }
            if case let .item(p) = from, p.item >= snapshot.numberOfItems(inSectionAt: p.section) {
                return nil   // no such row: the engine says so
            }
            return "\(from.text) is already at \(to.text)"
        }
        return try await editCommand(o, client, json: json, verb: "moved", check: check) { doc throws(ListError) in
            switch (from, to) {
            case let (.section(a), .section(b)): try doc.moveSection(from: a, to: b)
            case let (.item(a), .item(b)): try doc.moveItem(from: a, to: b)
            default: break
            }
            return "\(from.text) → \(to.text)"
        }
    },
    "delete": ClientCommand(
        usage: usageText("delete DOC PATH [options]", "Deletes the item at PATH (S.I), or the section S with its items."),
        arguments: 2...2,
        check: { o in _ = try PathArgument(o.positional[1]) }
    ) { o, client, json in
        let path = try PathArgument(o.positional[1])
        return try await editCommand(o, client, json: json, verb: "deleted",
                                     check: { try checkExists(path, in: $0); return nil }) { doc throws(ListError) in
            switch path {
            case let .section(s): try doc.deleteSection(at: s)
            case let .item(p): try doc.deleteItem(at: p)
            }
            return path.text
        }
    },
    "rename": ClientCommand(
        usage: usageText("rename DOC PATH TEXT [options]\n       listsync rename DOC PATH --value-file FILE [options]\n       listsync rename DOC --name NEW-NAME [options]", """
            Changes the text of the item at PATH (S.I), or of section S. With --name, renames the document DOC \
            (by id, id prefix or name) itself on the daemon: `docs` and the web view show NEW-NAME from then on. \
            Needs the daemon's key or a device credential that may write DOC; peer daemons keep their name \
            (Docs/Daemon.md, "Renaming a document").
            """, extra: "  --name NEW-NAME      rename the document, not an item (DOC is then the only argument)\n" + valueFileHelp),
        values: ["--name", "--value-file"], arguments: 1...3,
        check: { o in
            if let name = o.value("--name") {
                guard o.positional.count == 1 else {
                    throw UsageError(message: "rename --name takes one argument, DOC, not \(o.positional.count): nothing was renamed")
                }
                guard !name.isEmpty else { throw UsageError(message: "a document's name cannot be empty: nothing was renamed") }
                guard o.value("--replica", env: "LISTSYNC_REPLICA") == nil else {
                    throw UsageError(message: "renaming a document needs the daemon: run it without --replica (a device copy keeps the name it was fetched with; Docs/Daemon.md, \"Renaming a document\")")
                }
            } else if o.positional.count != (o.value("--value-file") == nil ? 3 : 2) {
                throw UsageError(message: "rename takes DOC PATH TEXT (an item or a section), DOC PATH --value-file FILE, or DOC --name NEW-NAME (the document), not \(o.positional.count) argument(s): nothing was renamed")
            } else {
                _ = try PathArgument(o.positional[1])
                try checkValueSource(o, command: "rename", textAt: 2)
            }
        }
    ) { o, client, json in
        if let name = o.value("--name") {
            let info = try await client.resolve(o.positional[0])
            let renamed = try await client.renameDocument(info, to: name)
            if json {
                printJSON(["renamed": true, "id": renamed.id.description, "name": renamed.name, "was": info.name])
            } else {
                print("renamed \(shown(info.name)) (\(info.id)) to \(shown(renamed.name)) on the daemon")
            }
            return 0
        }
        let path = try PathArgument(o.positional[1])
        let value = try editValue(o, textAt: 2)
        return try await editCommand(o, client, json: json, verb: "renamed",
                                     check: { try checkExists(path, in: $0); return nil }) { doc throws(ListError) in
            switch path {
            case let .section(s):
                let snap = doc.snapshot()
                guard let id = snap.sectionIdentifier(at: s) else { throw ListError.sectionIndexOutOfRange(s, count: snap.numberOfSections) }
                try doc.setValue(value, forSection: id)
            case let .item(p):
                let snap = doc.snapshot()
                guard let id = snap.itemIdentifier(at: p) else {
                    throw ListError.indexPathOutOfRange(p, count: p.section < snap.numberOfSections ? snap.numberOfItems(inSectionAt: p.section) : 0)
                }
                try doc.setValue(value, forItem: id)
            }
            return path.text
        }
    },
    "export": ClientCommand(
        usage: usageText("export DOC FILE [options]", "Writes the document (its whole history, so an import syncs like the original) to FILE as JSON."),
        arguments: 2...2
    ) { o, client, json in
        let info = try await client.resolve(o.positional[0])
        // The daemon's copy as it is (compacted where the daemon compacted): the kept copy, which
        // follows the daemon's floor, or (against an older daemon) the daemon's copy fetched afresh.
        let live = try await client.openAsTheDaemonHasIt(info.id)
        let snapshot = live.document.encodedSnapshot()
        // The file is written in pieces as its base64 is made (memory: the snapshot, once).
        let file = Foundation.open(o.positional[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard file >= 0 else {
            throw CommandFailure(description: "cannot write \(o.positional[1]): \(fileProblem(o.positional[1], errno))")
        }
        var out = StreamedOutput(fd: file)
        writeExport(name: info.name, id: info.id, snapshot: snapshot, to: &out)
        let closed = close(file)
        if let e = out.failure ?? (closed == 0 ? nil : errno) {
            throw CommandFailure(description: "cannot write \(o.positional[1]): \(fileProblem(o.positional[1], e))")
        }
        let bytes = fileSize(o.positional[1])
        if json { printJSON(["file": o.positional[1], "bytes": bytes, "operations": live.document.operationCount]) } else {
            print("exported \(shown(info.name)) (\(live.document.operationCount) operations) to \(o.positional[1])")
        }
        return 0
    },
    "import": ClientCommand(
        usage: usageText("import FILE [--name NAME] [options]", "Creates a new document from a file written by `listsync export` (a new id; the name from the file unless --name).",
                         extra: "  --name NAME          the new document's name\n"),
        values: ["--name"], arguments: 1...1
    ) { o, client, json in
        // Memory: the file's snapshot once, then the document once: it becomes the opened copy,
        // and its operations go out a part at a time (each part acknowledged before the next is
        // rebuilt from the log). Bad input fails here, before anything is created.
        let (loaded, fileName): (ListDocument, String?) = try {
            let file = try ExportFile.read(o.positional[0])
            return (try ListDocument(snapshot: file.snapshot, replica: client.importReplica ?? ReplicaID.random()), file.name)
        }()
        let name = o.value("--name") ?? fileName ?? "imported"
        let id = try await client.create(name: name, sections: [])
        try await client.adopt(id, loaded)
        if json { printJSON(["id": id.description, "name": name, "operations": loaded.operationCount]) } else {
            print("imported \(loaded.operationCount) operations as \(shown(name)): \(id)")
        }
        return 0
    },
]

/// The most operations `import` rebuilds and sends at once.
let importPart = DaemonClient.resumePart

/// A change set in words, with index paths as the table shows them after the change.
func describeChange(_ c: ChangeSet, _ snapshot: ListSnapshot) -> [String] {
    var lines: [String] = []
    func item(_ p: IndexPath) -> String {
        guard p.section < snapshot.sections.count, p.item < snapshot.sections[p.section].items.count else { return "" }
        return " \"" + shown(snapshot.sections[p.section].items[p.item].value) + "\""
    }
    if c.reloadsData { lines.append("reloaded: \(snapshot.numberOfItems) item(s) in \(snapshot.sections.count) section(s)") }
    for s in c.deletedSections { lines.append("deleted section \(s)") }
    for s in c.insertedSections { lines.append("inserted section \(s)") }
    for m in c.movedSections { lines.append("moved section \(m.from) → \(m.to)") }
    for s in c.reloadedSections.union(c.reconfiguredSections) { lines.append("changed section \(s)") }
    for p in c.deletedItems { lines.append("deleted \(p.section).\(p.item)") }
    for p in c.insertedItems { lines.append("inserted \(p.section).\(p.item)\(item(p))") }
    for m in c.movedItems { lines.append("moved \(m.from.section).\(m.from.item) → \(m.to.section).\(m.to.item)\(item(m.to))") }
    for p in c.reloadedItems + c.reconfiguredItems { lines.append("changed \(p.section).\(p.item)\(item(p))") }
    for l in c.lostMoves { lines.append("a move lost to a concurrent one: \(l)") }
    for f in c.lostFields { lines.append(describeLostField(f, snapshot)) }
    return lines.isEmpty ? ["(no visible change)"] : lines
}
