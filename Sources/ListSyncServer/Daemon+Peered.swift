import ListStore

/// Whether this daemon has peers, across restarts (Docs/Daemon.md, "Files": `DIR/peered`;
/// Docs/Semantics.md §7, "A lost stability file").
///
/// A document whose stability file was lost is not compacted until a peer's table arrives, or,
/// on a daemon without peers, until the retire period passes with none. A daemon with peers
/// must not take that silence for "no peer": its peers may have compacted without its clients'
/// edits while it would compact without theirs, and neither copy could then be merged onto the
/// other. A daemon has peers when it dials one (`--peer`, discovery) or a peer's link attached to
/// one of its documents once; the second is written down in `DIR/peered` (atomically, before the
/// link's operations are taken), since the per-document stability file that also says it may be
/// the file that was lost.
extension Daemon {
    /// `DIR/peered`.
    nonisolated var peeredPath: String { configuration.dataFolder + "/peered" }

    /// Whether this daemon has peers (``notePeered()``); read by every document's host at each
    /// housekeeping (``ListSync/CompactionRule/peered``).
    nonisolated var hasPeers: Bool { peered.withLock { $0 } }

    /// ``hasPeers`` as each document's host asks it, at its housekeeping (the host does not keep
    /// the daemon alive).
    nonisolated var peeredQuery: @Sendable () -> Bool { { [weak self] in self?.hasPeers ?? false } }

    /// At start: the daemon has peers if `DIR/peered` exists or it dials one (then the file is
    /// written too).
    func loadPeered() {
        if configuration.fileSystem.exists(peeredPath) { peered.withLock { $0 = true } }
        if !configuration.peers.isEmpty { notePeered() }
    }

    /// Notes that this daemon has peers, writing `DIR/peered` the first time. A failure to write
    /// it is logged; the daemon still knows until it restarts.
    func notePeered() {
        guard !hasPeers else { return }
        peered.withLock { $0 = true }
        do {
            try configuration.fileSystem.writeAtomically(Array("peered\n".utf8), to: peeredPath, folder: configuration.dataFolder)
            log("peers noted", ["file": peeredPath])
        } catch {
            log("peers not noted", ["file": peeredPath, "error": "\(error)",
                                    "consequence": "after a restart, a document whose stability file is lost may compact alone once --retire-after passes"])
        }
    }
}
