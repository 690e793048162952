import ListCRDT
import ListSync

// `listsync simulate --trace` (``SimulationConfiguration/trace``): one line per frame delivered
// and per step the run takes (an edit, a crash, a cut connection, a client's decision, a merge
// back), with the virtual time, so that a failing seed can be followed without patching the
// simulator (Docs/Simulation.md, "Tracing a seed"). The lines depend on the seed alone, as
// everything else does.

extension Simulator {
    /// Notes one line of the trace, after the virtual time (callers build it only when
    /// ``SimulationConfiguration/trace`` is on).
    mutating func trace(_ what: String) {
        traceLines.append("\(network.now) \(what)")
    }

    /// A node as the trace names it: `d0`… for the daemons, `c0`… for the clients.
    func nodeName(_ node: Int) -> String {
        node < daemons.count ? "d\(node)" : "c\(node - daemons.count)"
    }

    /// A frame delivered from `from` to `to`, as one line.
    mutating func traceFrame(_ from: Int, _ to: Int, _ frame: [UInt8]) {
        guard configuration.trace else { return }
        let said: String
        do { said = Self.describe(try SyncMessage(decoding: frame)) } catch { said = "unreadable (\(error))" }
        trace("\(nodeName(from)) → \(nodeName(to)): \(said)")
    }

    /// Operations as the trace names them: each one's id (its last, for one that spans several)
    /// and kind.
    static func describe(_ ops: [ListOperation]) -> String {
        ops.map { op in
            let id = op.lastID == op.id ? "\(op.id)" : "\(op.id)…\(op.lastID.counter)"
            return "\(id)"
        }.joined(separator: " ")
    }

    /// One message, briefly.
    static func describe(_ message: SyncMessage) -> String {
        switch message {
        case let .subscribe(_, epoch, version, _, _): return "subscribe epoch \(epoch) from \(version)"
        case let .subscribed(_, _, _, version): return "subscribed at \(version)"
        case let .synced(_, version): return "synced \(version)"
        case .unsubscribe: return "unsubscribe"
        case let .operations(_, batch, ops): return "operations batch \(batch): \(describe(ops))"
        case let .ack(_, batch, version): return "ack batch \(batch) at \(version)"
        case let .hello(_, version): return "hello \(version)"
        case let .create(request, _, _, _, _): return "create (request \(request))"
        case let .created(request, _, _): return "created (request \(request))"
        case let .listDocuments(request, _): return "list documents (request \(request))"
        case let .documents(request, list, _): return "documents (request \(request)): \(list.count)"
        case let .status(request): return "status (request \(request))"
        case let .statusReport(request, part, _): return "status report (request \(request)): \(part.count) bytes"
        case let .error(request, _, code, text): return "error (request \(request)) \(code): \(text)"
        case let .presence(_, presence): return "presence of \(presence.replica)"
        case let .destroy(request, _, _): return "destroy (request \(request))"
        case let .destroyed(request, _, _): return "destroyed (request \(request))"
        case let .rename(request, _, _): return "rename (request \(request))"
        case let .seen(_, replica, version, role): return "seen by \(replica) (\(role)): \(version)"
        case let .snapshot(_, part, more): return "snapshot part of \(part.count) bytes\(more ? ", more follow" : "")"
        case let .stable(_, version): return "stable at \(version)"
        case let .stability(_, from, entries):
            // Each entry: its daemon, sequence, version, and the retirements it lists or acknowledges.
            return "stability from \(from): " + entries.sorted { $0.key < $1.key }.map { d, e in
                "\(d) #\(e.sequence) at \(e.version)" + (e.retired.isEmpty ? "" : " retired \(e.retired.sorted()) at #\(e.retiredAt)")
                    + (e.acknowledged.isEmpty ? "" : " acknowledging \(e.acknowledged.sorted { $0.key < $1.key }.map { "\($0.key)#\($0.value)" })")
            }.joined(separator: "; ")
        case let .parted(_, ranges): return "parted \(ranges)"
        case let .remade(_, ranges): return "remade \(ranges)"
        case let .floorSnapshot(_, part, more): return "offered snapshot part of \(part.count) bytes\(more ? ", more follow" : "")"
        }
    }
}
