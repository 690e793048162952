"""Text in a card's notes on Loro and Yrs (Benchmarks/WORKLOADS.md), called by peers.py:
W17.notes, a board of 5,000 cards with 2 KB of notes each, each card's notes typed into a text as
one insert; W16.text, the automerge-paper trace typed into one card's notes (w16_text).

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


# --------------------------------------------------------------------------
# W16.text: the automerge-paper trace typed into one card's notes
# --------------------------------------------------------------------------
class LoroCardText(LoroNotes):
    """One card (a LoroMap in the LoroMovableList "cards") whose notes are a LoroText; a trace line
    is one delete and one insert of its text (a splice), committed every 1% of the trace, as
    peers.py's W1.trace on Loro. History, snapshot and load as LoroNotes."""

    def create(self):
        m = self.cards.insert_container(0, LoroMap())
        m.insert("title", "card 0")
        self.text = m.insert_container("notes", LoroText())
        self.doc.commit()

    def run(self, pos, dels, texts, lo, hi):
        ins, rem = self.text.insert, self.text.delete
        for k in range(lo, hi):
            if dels[k]:
                rem(pos[k], dels[k])
            if texts[k]:
                ins(pos[k], texts[k])
        self.doc.commit()

    def notes(self):
        return super().notes(0)


class YrsCardText(YrsNotes):
    """One card (a Map in the Array "cards") whose notes are a Text; a trace line is one Yrs
    transaction (remove_range and insert on the native Text), as peers.py's W1.trace on Yrs.
    History (both history and snapshot) and load as YrsNotes."""

    def create(self):
        self.cards.append(Map({"title": "card 0", "notes": Text()}))
        self.text = self.cards[0]["notes"].integrated
        self.txn = self.doc._doc.create_transaction

    def run(self, pos, dels, texts, lo, hi):
        ins, rem, ct = self.text.insert, self.text.remove_range, self.txn
        for k in range(lo, hi):
            x = ct()
            if dels[k]:
                rem(x, pos[k], dels[k])
            if texts[k]:
                ins(x, pos[k], texts[k])
            x.commit()
            x.drop()

    def notes(self):
        return super().notes(0)


def w16_text(engine, args, h):
    """(metrics, ops, ok, note) of W16.text; h: the peers module (trace, timing, repetition)."""
    pos, dels, texts, final = h.load_trace(args.trace)  # untimed
    total = len(pos)
    cls = YrsCardText if engine == "yrs" else LoroCardText

    def once():
        before = h.rss_now()
        d = cls(1)
        d.create()  # untimed: the card
        ns, done = h.timed(lambda lo, hi: d.run(pos, dels, texts, lo, hi), total)
        m = {"ns_per_op": ns / done, "doc_rss_bytes": h.rss_now() - before}
        if done < total:
            m["lower_bound"] = True
        return ns / done, m, done, d

    (_, m, done, d), runs = h.repeat_best(once, h.RUNS, stop=lambda r: r[2] < total)
    if done < total:
        return m, done, False, "W16.text" + h.over_budget(m, done, total)
    got = d.notes()
    hist, snap = d.history(), d.snapshot()

    def load_once(data):
        def f():
            e = cls(99)
            t = time.perf_counter_ns()
            e.load(data)
            n = len(e.notes())  # the text read once (Loro decodes lazily)
            return (time.perf_counter_ns() - t) / 1e6, n == len(got)
        return f

    lh, lh_ok, lh_runs = h.best_ms(h.LOADS, load_once(hist))
    ls, ls_ok, ls_runs = h.best_ms(h.LOADS, load_once(snap))
    m.update({"characters": len(got), "history_bytes": len(hist), "snapshot_bytes": len(snap),
              "load_history_ms": lh, "load_snapshot_ms": ls})
    what = ("Yrs: a Text in a Map in an Array, one transaction per trace line (its update is both history"
            " and snapshot)" if engine == "yrs" else
            "Loro: a LoroText in a LoroMap in a LoroMovableList, one delete + one insert per trace line,"
            " a commit per 1% of the trace (timed)")
    note = (f"the trace typed into one card's notes; {what}; ns_per_op {h.rep_note(h.RUNS, runs)};"
            f" loads into a fresh doc, the text read: load_history_ms {h.rep_note(h.LOADS, lh_runs, 'loads')},"
            f" load_snapshot_ms {h.rep_note(h.LOADS, ls_runs, 'loads')}")
    return m, total, final is not None and got == final and lh_ok and ls_ok, note
