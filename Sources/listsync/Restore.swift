import Foundation
import ListCRDT
import ListSync
import ListStore

let restoreUsage = """
    USAGE: listsync restore DOC FILE [--data DIR]

    Replaces document DOC (an id, or an exact name) in the data folder with the contents of FILE
    (written by `listsync export`), and gives it a new epoch: clients and peers that hold the old
    document are refused (`epoch mismatch`) and re-attach, instead of merging their copy back into
    the restored one. Run it with the daemon stopped (the data folder is locked while it runs).

    OPTIONS:
      --data DIR     the data folder (LISTSYNC_DATA; default ~/.listsync)
      --json         print JSON
      -h, --help     show this help
    """

func runRestore(_ args: [String]) throws -> Int32 {
    let o = try Options(args, values: ["--data"], flags: ["--help", "--json"])
    if o.has("--help") { print(restoreUsage); return 0 }
    guard o.positional.count == 2 else { throw UsageError(message: "restore takes DOC and FILE") }
    let json = o.has("--json")
    let root = o.value("--data", env: "LISTSYNC_DATA") ?? defaultDataFolder()
    let file: ExportFile
    do { file = try ExportFile.read(o.positional[1]) } catch {
        return fail("restore", error.description, json: json)
    }
    do {
        let loaded = try ListDocument(snapshot: file.snapshot, replica: ReplicaID.random())
        let folder = try DataFolder(root: root)
        defer { folder.close() }
        let entries = try folder.list()
        guard let entry = entries.first(where: { $0.id.description == o.positional[0].lowercased() })
                ?? entries.first(where: { $0.name == o.positional[0] }) else {
            return fail("restore", "no document \"\(o.positional[0])\" in \(root)", json: json)
        }
        // Build the restored store beside the old one, then swap the two folders.
        let path = folder.folder(of: entry.id)
        let fresh = path + ".restoring"
        let aside = path + ".replaced-\(Int(Date().timeIntervalSince1970))"
        let fm = FileManager.default
        try? fm.removeItem(atPath: fresh)
        try FileSystem.system.mkdir(fresh)   // 0700, like every folder the daemon makes
        try fm.copyItem(atPath: path + "/name", toPath: fresh + "/name")
        var options = StoreOptions()
        let epoch = UInt64.random(in: 1...UInt64.max)
        options.newEpoch = { epoch }
        let (store, document) = try DocumentStore.open(at: fresh, documentID: entry.id, replica: ReplicaID.random(), options: options)
        var restored = document
        try store.append(loaded.operations)
        restored.receive(loaded.operations)
        try store.snapshot(restored)
        try store.close()
        try fm.moveItem(atPath: path, toPath: aside)
        try fm.moveItem(atPath: fresh, toPath: path)
        try fm.removeItem(atPath: aside)
        if json { printJSON(["id": entry.id.description, "epoch": String(epoch), "operations": loaded.operationCount]) } else {
            print("restored \(shown(entry.name)) (\(loaded.operationCount) operations) with a new epoch; clients holding the old one will re-attach")
        }
        return 0
    } catch let e as StoreError {
        if case .locked = e { return fail("restore", "the data folder \(root) is in use: stop the daemon first", json: json) }
        return fail("restore", e.description, json: json)
    } catch {
        return fail("restore", describe(error), json: json)
    }
}
