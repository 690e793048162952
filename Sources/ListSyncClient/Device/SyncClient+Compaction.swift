import ListCRDT
import ListStore
import ListSync

// A device's copy compacted where its daemon compacted (Docs/Protocol.md, "Compaction";
// Docs/Semantics.md §7, "A device learns the floor"): without it the copy on the device would
// keep the whole history for ever, in memory and on disk.

extension SyncClient {
    /// The daemon compacted `copy`'s document at `floor` (`stable`): if the device policy says so
    /// (``ListSync/DeviceClientMachine/compacts(at:document:)``: the copy
    /// holds exactly that version, so the daemon holds all of it) and nothing is being stored or
    /// has failed, it compacts there too, in memory (``ListTable/LiveDocument/compact(at:)``: what it shows and its undo history stay)
    /// and in its store (a new generation, which drops the old log). Anything else (a copy ahead
    /// of the floor, a refusal) changes nothing: the next compaction tells it again. (This actor's
    /// method does not suspend: nothing else touches the copy meanwhile.)
    ///
    /// - Complexity: that of the compaction and of writing the compacted snapshot.
    func compactCopy(_ copy: LocalCopy, at floor: VersionVector) {
        let document = copy.live.document
        guard copy.machine.compacts(at: floor, document: document), copy.appending == 0, copy.failure == nil else { return }
        do { try copy.live.compact(at: floor) } catch { return }
        // The store's old generation stays whole if this fails: it loads uncompacted, which is
        // safe, and the next compaction writes it again.
        do { try copy.store.compact(copy.live.document) } catch {
            lastError = "the compacted copy of \(copy.id) was not written: \(error)"
        }
        // The daemon holds the floor (it compacted there, durably): what it acknowledged is at
        // least that. Without it, the record could name a version the copy's history no longer
        // goes back to, and a re-sync would not find the edits made since (it takes those after
        // the record's version).
        act(copy.machine.compacted(at: floor, document: copy.live.document), for: copy)
    }

    /// Drops what `copy` keeps waiting on operations the daemons parted
    /// (``ListSync/DeviceClientMachine/Action/dropPartedWaiting``; Docs/Semantics.md §7, "A device
    /// drops what waits on parted originals"), in memory and in its store: the copy is written as
    /// a new generation, whose log carries only what still waits, so that a restart does not keep
    /// them waiting again. Only while nothing is being stored (the snapshot must hold every
    /// logged operation it keeps); else the next `synced` or `parted` asks again. If the write
    /// fails the old generation stays whole: a restart keeps them waiting until the device is
    /// told the ranges again, as every subscription is.
    ///
    /// - Complexity: that of ``ListTable/LiveDocument/dropWaiting(onParted:)`` and of writing the
    ///   copy.
    func dropPartedWaiting(_ copy: LocalCopy) {
        guard copy.appending == 0, copy.failure == nil else { return }
        let parted = copy.machine.parted
        guard !copy.live.dropWaiting(onParted: parted.contains).isEmpty else { return }
        do { try copy.store.replace(with: copy.live.document) } catch {
            lastError = "the copy of \(copy.id) without what waits on parted operations was not written: \(error)"
        }
    }
}
