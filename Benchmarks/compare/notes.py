"""W17.notes on Loro and Yrs (Benchmarks/WORKLOADS.md), called by peers.py: a board of 5,000 cards
with 2 KB of notes each, each card's notes typed into a text as one insert.

- Loro (`loro-movable`, also run for `loro-list`: the same code): one `LoroMovableList` "cards",
  a card is a `LoroMap` with `title` and `notes`, a `LoroText`.
- Yrs (`yrs`, pycrdt): one `Array` "cards" of `Map`s with `title` and `notes`, a `Text`.

The notes are the text listsync-bench's W17Notes.swift makes (SplitMix64, seed 17000 + card).
"""
import time

from loro import ExportMode, LoroDoc, LoroMap, LoroText, VersionVector
from pycrdt import Array, Doc, Map, Text

from splitmix import SplitMix64

CARDS, NOTE_BYTES = 5000, 2048
WORDS = ["milk", "eggs", "call", "Ana", "about", "the", "release", "notes", "before", "Friday", "check",
         "budget", "and", "ship", "it", "design", "review", "fix", "crash", "on", "launch"]


def notes_text(k):
    rng = SplitMix64(17000 + k)
    out = ""
    while len(out) < NOTE_BYTES:
        if out:
            out += " "
        out += WORDS[rng.next() % len(WORDS)]
    return out[:NOTE_BYTES]


class LoroNotes:
    def __init__(self, peer):
        self.doc = LoroDoc()
        self.doc.peer_id = peer
        self.cards = self.doc.get_movable_list("cards")

    def build(self, texts):
        for k, t in enumerate(texts):
            m = self.cards.insert_container(k, LoroMap())
            m.insert("title", f"card {k}")
            m.insert_container("notes", LoroText()).insert(0, t)
        self.doc.commit()

    def history(self):
        return self.doc.export(ExportMode.Updates(VersionVector()))

    def snapshot(self):
        return self.doc.export(ExportMode.Snapshot())

    def load(self, data):
        self.doc.import_(data)

    def notes(self, k):
        return self.cards.get(k).container.get("notes").container.to_string()

    def count(self):
        return len(self.cards)


class YrsNotes:
    def __init__(self, peer):
        self.doc = Doc(client_id=peer)
        self.cards = self.doc.get("cards", type=Array)

    def build(self, texts):
        with self.doc.transaction():
            for k, t in enumerate(texts):
                self.cards.append(Map({"title": f"card {k}", "notes": Text(t)}))

    def history(self):
        return self.doc.get_update()

    snapshot = history

    def load(self, data):
        self.doc.apply_update(data)

    def notes(self, k):
        return str(self.cards[k]["notes"])

    def count(self):
        return len(self.cards)


def w17_notes(engine, args, h):
    """(metrics, ops, ok, note); h: the peers module (rss, repetition helpers)."""
    texts = [notes_text(k) for k in range(CARDS)]  # untimed
    cls = YrsNotes if engine == "yrs" else LoroNotes
    a = cls(1)
    t0 = time.perf_counter_ns()
    a.build(texts)
    build_ms = (time.perf_counter_ns() - t0) / 1e6
    hist, snap = a.history(), a.snapshot()

    def same(d):
        return d.count() == CARDS and all(d.notes(k) == texts[k] for k in (0, CARDS // 2, CARDS - 1))

    def load_once(data):
        def f():
            d = cls(99)
            t = time.perf_counter_ns()
            d.load(data)
            ms = (time.perf_counter_ns() - t) / 1e6
            return ms, same(d)
        return f

    lh, lh_ok, lh_runs = h.best_ms(h.LOADS, load_once(hist))
    ls, ls_ok, ls_runs = h.best_ms(h.LOADS, load_once(snap))
    before = h.rss_now()
    replicas = []
    for k in range(3):
        d = cls(100 + k)
        d.load(snap)
        d.notes(0)  # Loro decodes lazily: read once, as an app showing the board would
        replicas.append(d)
    memory = (h.rss_now() - before) // len(replicas)
    m = {"build_ms": build_ms, "history_bytes": len(hist), "snapshot_bytes": len(snap), "load_snapshot_ms": ls,
         "load_history_ms": lh, "memory_bytes": memory, "text_bytes": sum(len(t) for t in texts)}
    what = ("Yrs: an Array of Maps, notes a Text (its update is both history and snapshot)" if engine == "yrs"
            else "Loro: a LoroMovableList of LoroMaps, notes a LoroText")
    note = (f"{CARDS} cards, each with 2 KB notes typed as one insert; {what}; load_snapshot_ms "
            f"{h.rep_note(h.LOADS, ls_runs, 'loads')}, load_history_ms {h.rep_note(h.LOADS, lh_runs, 'loads')}; "
            "memory_bytes = RSS growth of three replicas loaded from the snapshot / 3")
    return m, CARDS * 2, lh_ok and ls_ok and all(same(d) for d in replicas), note
