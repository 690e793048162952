"""W14.kanban on Loro and Yrs (Benchmarks/WORKLOADS.md), called by peers.py.

Both replay the operation script of kanban_script.py (the file listsync-bench reads too).

- Loro (`loro-movable`, also run for `loro-list`: the same code): one `LoroMovableList` per section
  ("s0".."s7"), a card is a `LoroMap` in it with `id` (the card number), title, notes, done, due
  (int milliseconds), votes (a `LoroCounter`) and tags (a `LoroMap` tag -> True; removing a tag
  deletes the key). A move within a section is `mov(from, to)`; Loro cannot move between lists, so
  a move across sections is a delete in the source list and a new `LoroMap` in the target with the
  card's fields copied (read from the replica's own document; the counter starts at the value
  read).
- Yrs (`yrs`, pycrdt): one `Array` per section holding a `Map` per card (the same keys; tags a
  nested `Map`; votes a plain int, read, added to and written back: Yrs has no counter). Every
  move (within or across sections) is a delete and a re-insert of a new `Map` with the fields
  copied. One pycrdt transaction per operation.
"""
import ctypes
import time

from loro import ExportMode, LoroCounter, LoroDoc, LoroMap, VersionVector
from pycrdt import Array, Doc, Map

import kanban_script


def _i(v):
    return int(v) if isinstance(v, float) else v


class LoroKanban:
    def __init__(self, peer, sections):
        self.doc = LoroDoc()
        self.doc.peer_id = peer
        self.lists = [self.doc.get_movable_list(f"s{s}") for s in range(sections)]

    @staticmethod
    def _fill(m, fields):
        for k in ("id", "title", "notes", "done", "due"):
            m.insert(k, fields[k])
        m.insert_container("votes", LoroCounter()).increment(fields["votes"])
        tags = m.insert_container("tags", LoroMap())
        for t in fields["tags"]:
            tags.insert(t, True)

    def build(self, initial):
        rows = [0] * len(self.lists)
        for c in initial:
            s = c["section"]
            m = self.lists[s].insert_container(rows[s], LoroMap())
            rows[s] += 1
            self._fill(m, {"id": c["card"], "title": c["title"], "notes": c["notes"], "done": c["done"],
                           "due": c["due"], "votes": c["votes"], "tags": c["tags"]})
        self.doc.commit()

    def card(self, s, r):
        return self.lists[s].get(r).container

    def run(self, ops):
        lists, commit = self.lists, self.doc.commit
        every = max(1, len(ops) // 100)
        for n, op in enumerate(ops):
            kind = op[0]
            if kind == "m":
                _, fs, fr, ts, tr, _card = op
                if fs == ts:
                    lists[fs].mov(fr, tr)
                else:
                    v = lists[fs].get(fr).container.get_deep_value()
                    lists[fs].delete(fr, 1)
                    m = lists[ts].insert_container(tr, LoroMap())
                    self._fill(m, {"id": _i(v["id"]), "title": v["title"], "notes": v["notes"], "done": v["done"],
                                   "due": _i(v["due"]), "votes": v["votes"], "tags": list(v["tags"])})
            elif kind == "s":
                self.card(op[1], op[2]).insert(op[4], op[5])
            elif kind == "c":
                self.card(op[1], op[2]).get("votes").container.increment(op[4])
            elif kind == "a":
                self.card(op[1], op[2]).get("tags").container.insert(op[4], True)
            elif kind == "r":
                self.card(op[1], op[2]).get("tags").container.delete(op[4])
            else:
                lists[op[1]].delete(op[2], 1)
            if n % every == every - 1:
                commit()
        commit()

    def version(self):
        return self.doc.oplog_vv

    def update_since(self, vv):
        return self.doc.export(ExportMode.Updates(vv))

    def receive(self, update):
        self.doc.import_(update)

    def history(self):
        return self.doc.export(ExportMode.Updates(VersionVector()))

    def snapshot(self):
        return self.doc.export(ExportMode.Snapshot())

    def load(self, data):
        self.doc.import_(data)

    def read_all(self):
        """Every card's fields, as the binding gives them (no normalising)."""
        return self.doc.get_deep_value()

    def state(self):
        v = self.doc.get_deep_value()
        return [[_norm(c) for c in v.get(f"s{s}", [])] for s in range(len(self.lists))]


class YrsKanban:
    def __init__(self, peer, sections):
        self.doc = Doc(client_id=peer)
        self.arrays = [self.doc.get(f"s{s}", type=Array) for s in range(sections)]

    @staticmethod
    def _map(f):
        return Map({"id": f["id"], "title": f["title"], "notes": f["notes"], "done": f["done"], "due": f["due"],
                    "votes": f["votes"], "tags": Map({t: True for t in f["tags"]})})

    def build(self, initial):
        rows = [0] * len(self.arrays)
        for k in range(0, len(initial), 10):  # one transaction per 10 inserts, as the other builds
            with self.doc.transaction():
                for c in initial[k:k + 10]:
                    s = c["section"]
                    self.arrays[s].insert(rows[s], self._map(
                        {"id": c["card"], "title": c["title"], "notes": c["notes"], "done": c["done"],
                         "due": c["due"], "votes": c["votes"], "tags": c["tags"]}))
                    rows[s] += 1

    def run(self, ops):
        arrays, txn = self.arrays, self.doc.transaction
        for op in ops:
            kind = op[0]
            with txn():
                if kind == "m":
                    _, fs, fr, ts, tr, _card = op
                    v = arrays[fs][fr].to_py()
                    del arrays[fs][fr]
                    arrays[ts].insert(tr, self._map({"id": _i(v["id"]), "title": v["title"], "notes": v["notes"],
                                                     "done": v["done"], "due": _i(v["due"]), "votes": _i(v["votes"]),
                                                     "tags": list(v["tags"])}))
                elif kind == "s":
                    arrays[op[1]][op[2]][op[4]] = op[5]
                elif kind == "c":
                    m = arrays[op[1]][op[2]]
                    m["votes"] = _i(m["votes"]) + op[4]
                elif kind == "a":
                    arrays[op[1]][op[2]]["tags"][op[4]] = True
                elif kind == "r":
                    del arrays[op[1]][op[2]]["tags"][op[4]]
                else:
                    del arrays[op[1]][op[2]]

    def version(self):
        return self.doc.get_state()

    def update_since(self, state):
        return self.doc.get_update(state)

    def receive(self, update):
        self.doc.apply_update(update)

    def history(self):
        return self.doc.get_update()

    snapshot = history  # Yrs has no separate snapshot format

    def load(self, data):
        self.doc.apply_update(data)

    def read_all(self):
        """Every card's fields, as the binding gives them (no normalising)."""
        return [a.to_py() for a in self.arrays]

    def state(self):
        return [[_norm(c) for c in a.to_py()] for a in self.arrays]


def _norm(c):
    return (_i(c["id"]), c["title"], c["notes"], c["done"], _i(c["due"]), _i(c["votes"]), tuple(sorted(c["tags"])))


def w14_kanban(engine, args, h):
    """(metrics, ops, ok, note); h: the peers module (rss, repetition helpers)."""
    script = kanban_script.ensure_script(args.kanban_script)  # untimed
    sections, reps = script["sections"], script["replicas"]
    n = len(reps)
    ops = sum(len(r) for r in reps)
    cls = YrsKanban if engine == "yrs" else LoroKanban
    first = {}

    def fresh():
        a = cls(1, sections)
        t0 = time.perf_counter_ns()
        a.build(script["initial"])
        first.setdefault("build_ms", (time.perf_counter_ns() - t0) / 1e6)
        board = a.history()
        docs = [a]
        for k in range(1, n):
            d = cls(k + 1, sections)
            d.receive(board)
            docs.append(d)
        return docs

    results = []

    def once():
        before = h.rss_now()
        docs = fresh()
        forks = [d.version() for d in docs]
        t0 = time.perf_counter_ns()
        for d, r in zip(docs, reps):
            d.run(r)
        t1 = time.perf_counter_ns()
        updates = [d.update_since(v) for d, v in zip(docs, forks)]
        for k, d in enumerate(docs):
            for j in range(n):
                if j != k:
                    d.receive(updates[j])
        t2 = time.perf_counter_ns()
        if "memory_bytes" not in first:
            first["memory_bytes"] = (h.rss_now() - before) // n
        states = [d.state() for d in docs]
        results.append(states)
        return ((t2 - t0) / 1e6, (t1 - t0) / 1e6, (t2 - t1) / 1e6, docs, sum(len(u) for u in updates))

    best, runs = h.repeat_best(once, h.MOVE_RUNS)
    ms, make_ms, merge_ms, docs, exchange = best
    hist, snap = docs[0].history(), docs[0].snapshot()

    def load_once(data):
        def f():
            d = cls(99, sections)
            t0 = time.perf_counter_ns()
            d.load(data)
            count = sum(len(x) for x in (d.lists if cls is LoroKanban else d.arrays))
            return (time.perf_counter_ns() - t0) / 1e6, count
        return f

    def load_read_once(data):
        # The load, then every card's fields read: what showing the whole board costs (ListSync's
        # load_snapshot_read_ms reads them with ListDocument.snapshot()). Includes the binding's
        # conversion of the values to Python objects.
        def f():
            d = cls(99, sections)
            t0 = time.perf_counter_ns()
            d.load(data)
            read = d.read_all()
            return (time.perf_counter_ns() - t0) / 1e6, len(read)
        return f

    lh, _, lh_runs = h.best_ms(h.LOADS, load_once(hist))
    ls, _, ls_runs = h.best_ms(h.LOADS, load_once(snap))
    lr, _, lr_runs = h.best_ms(h.LOADS, load_read_once(snap))
    # Memory of a device that opened the board: three replicas loaded from the snapshot, every
    # card read once (the values read dropped), kept alive together; RSS growth / 3.
    # The allocator's free pages are given back before each reading (malloc_trim, as
    # listsync-bench's trimmed RSS): the runs before freed far more than a loaded board takes.
    def trimmed_rss():
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass
        return h.rss_now()

    before = trimmed_rss()
    held = []
    for k in range(3):
        d = cls(200 + k, sections)
        d.load(snap)
        d.read_all()
        held.append(d)
    loaded_memory = (trimmed_rss() - before) // len(held)
    shown = results[0][0]
    converged = all(s == shown for states in results for s in states)
    seen = [c[0] for sec in shown for c in sec]
    m, once_ok = kanban_script.card_check(script, seen, sum(c[5] for sec in shown for c in sec))
    m.update({"ms": ms, "make_ms": make_ms, "merge_ms": merge_ms, "ns_per_op": ms * 1e6 / ops,
              "build_ms": first["build_ms"], "exchange_bytes": exchange, "history_bytes": len(hist),
              "snapshot_bytes": len(snap), "load_history_ms": lh, "load_snapshot_ms": ls,
              "load_snapshot_read_ms": lr, "memory_bytes": first["memory_bytes"],
              "loaded_memory_bytes": loaded_memory})
    moves_across = sum(1 for r in reps for op in r if op[0] == "m" and op[1] != op[3])
    moves_within = sum(1 for r in reps for op in r if op[0] == "m" and op[1] == op[3])
    if engine == "yrs":
        how = (f"Yrs: every move ({moves_within} within + {moves_across} across sections) is a delete + re-insert "
               "of a new Map with the fields copied; votes is a plain int (read, add, write)")
    else:
        how = (f"Loro: one LoroMovableList of LoroMaps per section; {moves_within} moves within a section are mov(), "
               f"{moves_across} across sections are a delete + a new LoroMap with the fields copied (the counter "
               "restarted at the value read)")
    note = (f"{len(script['initial'])} cards x 6 fields in {sections} sections, {n} replicas x "
            f"{'/'.join(str(len(r)) for r in reps)} operations from {args.kanban_script}; {how}; "
            f"converged={converged}, every card once={once_ok} (duplicates {m['duplicate_cards']}, lost "
            f"{m['lost_cards']}, resurrected {m['resurrected_cards']}; {m['kept_moved_deleted']} deleted cards kept "
            f"by a concurrent move's copy), votes {m['votes_after_merge']} of "
            f"{m['votes_expected']}; ms {h.rep_note(h.MOVE_RUNS, runs)} on fresh replicas (make + merge: updates "
            f"since the fork exported once, imported by each other replica); load_history_ms "
            f"{h.rep_note(h.LOADS, lh_runs, 'loads')}, load_snapshot_ms {h.rep_note(h.LOADS, ls_runs, 'loads')} (the lists' lengths read), "
            f"load_snapshot_read_ms {h.rep_note(h.LOADS, lr_runs, 'loads')} (every card's fields read, "
            f"{'to_py()' if engine == 'yrs' else 'get_deep_value()'}, with the binding's conversions); "
            f"memory_bytes = RSS delta of the first run / {n}; loaded_memory_bytes = RSS growth of three replicas "
            f"each loaded from the snapshot with every card read, kept alive together, / 3")
    # ok: the replicas converged (the engine's own consistency); every_card_once reports the rest.
    return m, ops, converged, note
