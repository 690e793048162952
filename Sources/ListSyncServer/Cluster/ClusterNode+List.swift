import Foundation
import ListCRDT
import ListSync
import ListSyncNATS

/// The cluster's document list (Docs/Cluster.md): a key-value bucket with an entry per
/// document made (`<id>`: name and epoch), renamed (`name.<id>`) and destroyed
/// (`destroyed.<id>`). Not a decision of ``ClusterMachine``: a list entry is written once or
/// whole, and every node reads the bucket every ``ClusterConfiguration/listInterval``.
extension ClusterNode {
    /// A document was created on this node: put it in the bucket (once: a compare-and-set on
    /// the key's absence).
    func created(_ id: DocumentID, name: String, epoch: UInt64) async {
        guard let bucket, let value = Self.listEntry(name: name, epoch: epoch) else { return }
        do { try await bucket.update(id.description, value, revision: 0) } catch {
            if case let .api(_, code, _) = error, code == JetStreamError.wrongLastSequence { return }
            daemon?.log("cluster list not updated", ["document": id.description, "error": "\(error)"])
        }
    }

    /// A document is being renamed on this node: the bucket takes the new name first (key
    /// `name.<id>`, written whole: the last rename wins), and every node renames its copy when it
    /// next reads the list. Returns why the bucket did not take it (the rename is then refused),
    /// nil once it did.
    func renamed(_ id: DocumentID, name: String) async -> String? {
        guard let bucket else { return nil }
        do { try await bucket.put(Self.namePrefix + id.description, Array(name.utf8)) } catch {
            return "the cluster's document list did not take the name: \(error)"
        }
        return nil
    }

    static let namePrefix = "name."

    /// A list entry's bytes: `{"name", "epoch"}`.
    static func listEntry(name: String, epoch: UInt64) -> [UInt8]? {
        (try? JSONSerialization.data(withJSONObject: ["name": name, "epoch": epoch] as [String: Any])).map(Array.init)
    }

    /// A list entry's name and epoch, nil if it is not one.
    static func readEntry(_ bytes: [UInt8]) -> (name: String, epoch: UInt64)? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any],
              let name = object["name"] as? String, let epoch = (object["epoch"] as? NSNumber)?.uint64Value else { return nil }
        return (name, epoch)
    }

    /// A document was destroyed on this node: the bucket says so (key `destroyed.<id>`), and
    /// every node destroys its copy when it next reads the list.
    func destroyed(_ id: DocumentID) async {
        guard let bucket, !knownDestroyed.contains(id) else { return }
        knownDestroyed.insert(id)
        await drop(id)
        do { try await bucket.put(Self.destroyedPrefix + id.description, Array("destroyed".utf8)) } catch {
            daemon?.log("cluster destroy not listed", ["document": id.description, "error": "\(error)"])
            knownDestroyed.remove(id)
            return
        }
        // Listed as destroyed (the id is refused from now on): its operations, snapshot and
        // lease go from the cluster. Not before: a node that died in between would leave a
        // document that every node still lists, emptied.
        if let js {
            do { _ = try await js.purge(configuration.stream, subject: ClusterEnvelope.subject(prefix: configuration.subjectPrefix, id)) } catch {
                log("cluster destroy not purged", ["document": id.description, "error": "\(error)"])
            }
        }
        if let snapshots {
            do { try await snapshots.remove(id) } catch {
                log("cluster destroy not purged", ["document": id.description, "error": "\(error)"])
            }
        }
    }

    static let destroyedPrefix = "destroyed."

    /// Reads the bucket; destroys the documents destroyed elsewhere and makes those this node
    /// lacks (it follows none of them for that: only for a subscriber).
    func readList() async {
        guard !stopped, let bucket, let daemon else { return }
        let keys: [String], revision: UInt64
        do { (keys, revision) = try await bucket.keysAndRevision() } catch {
            daemon.log("cluster list not read", ["error": "\(error)"])
            return
        }
        let names = Dictionary(await daemon.list().map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
        let local = Set(names.keys)
        let gone = Set(keys.filter { $0.hasPrefix(Self.destroyedPrefix) }.compactMap { DocumentID(hex: String($0.dropFirst(Self.destroyedPrefix.count))) })
        for id in gone.sorted() where !knownDestroyed.contains(id) {
            knownDestroyed.insert(id)
            await drop(id)
            if local.contains(id) {
                do { _ = try await daemon.destroy(id, epoch: 0, reason: "destroyed on another cluster node") } catch {
                    daemon.log("cluster destroy not applied", ["document": id.description, "error": "\(error)"])
                }
            }
        }
        // Renames: a key `name.<id>` per renamed document, read only when the bucket changed since
        // this node last looked (its revision moved), and only those keys, not every entry.
        let renamed = Set(keys.filter { $0.hasPrefix(Self.namePrefix) }.compactMap { DocumentID(hex: String($0.dropFirst(Self.namePrefix.count))) })
        func currentName(_ id: DocumentID) async -> String? {
            guard renamed.contains(id) else { return nil }
            do {
                guard let entry = try await bucket.get(Self.namePrefix + id.description) else { return nil }
                return String(decoding: entry.value, as: UTF8.self)
            } catch {
                daemon.log("cluster list not read", ["document": id.description, "error": "\(error)"])
                return nil
            }
        }
        for k in keys {
            guard let id = DocumentID(hex: k), !gone.contains(id), !local.contains(id) else { continue }
            let entry: KeyValue.Entry?
            do { entry = try await bucket.get(k) } catch {
                daemon.log("cluster list not read", ["document": k, "error": "\(error)"])
                continue
            }
            guard let entry, let (made, epoch) = Self.readEntry(entry.value) else {
                if entry != nil { daemon.log("cluster list entry refused", ["document": k, "error": "not {name, epoch}"]) }
                continue
            }
            let name = await currentName(id) ?? made
            do { _ = try await daemon.create(name: name, sections: [], id: id, epoch: epoch) } catch {
                daemon.log("cluster document not made", ["document": k, "error": "\(error)"])
            }
        }
        if revision != listRevision {
            for id in renamed.sorted() where local.contains(id) && !gone.contains(id) {
                guard let name = await currentName(id), name != names[id] else { continue }
                do { _ = try await daemon.rename(id, to: name, fromCluster: true) } catch {
                    daemon.log("cluster rename not applied", ["document": id.description, "error": "\(error)"])
                }
            }
        }
        listRevision = revision
    }
}
