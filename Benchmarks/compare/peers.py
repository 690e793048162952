#!/usr/bin/env python3
"""Run one ListSync comparison workload on Loro or Yrs and print one JSON object.

    python peers.py --engine loro-list|loro-movable|yrs --workload NAME [--trace PATH]
    python peers.py --engine ENGINE --list

The workloads are specified in Benchmarks/WORKLOADS.md; the Swift executable
`listsync-bench` implements the same specification.  Every operation sequence
is generated (untimed) before the timed section, from SplitMix64, and the
expected final state is computed with a plain Python model so each run can
verify itself (`ok`).

Engines:
  loro-list     loro.LoroList         (a move is delete + insert)
  loro-movable  loro.LoroMovableList  (a move is .mov(from, to))
  yrs           pycrdt.Array          (a move is delete + insert)

The timed loops call the native binding methods directly (bound to locals) so
that Python adds as little as possible; pycrdt's high-level wrapper is bypassed
(`Array.integrated` and `Doc._doc.create_transaction()`), see WORKLOADS.md.
"""
import argparse
import importlib.metadata
import json
import os
import random
import resource
import subprocess
import sys
import time
from array import array


def rss_now():
    """Current resident set size in bytes (from /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak():
    """Reset the kernel's peak-RSS counter (ru_maxrss / VmHWM) so that input
    preparation (parsing the trace) is not counted.  Linux >= 4.0."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def rss_peak():
    """Peak resident set size in bytes (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


import pycrdt  # noqa: E402  (imported after the helpers on purpose: see BASE_RSS)
from loro import ExportMode, LoroDoc, LoroList, LoroMovableList, VersionVector  # noqa: E402

BASE_RSS = rss_now()  # RSS right after imports; peak_rss_bytes is relative to it

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TRACE = os.path.join(HERE, "..", "Traces", "automerge-paper.jsonl")  # in the repo

MASK64 = (1 << 64) - 1
NS = 1e9


# --------------------------------------------------------------------------
# PRNG (must match the Swift side bit for bit)
# --------------------------------------------------------------------------
from splitmix import SplitMix64  # noqa: E402  (splitmix.py, shared with kanban_script.py)


# --------------------------------------------------------------------------
# Op generation (untimed, engine independent)
# --------------------------------------------------------------------------
def load_trace(path):
    """Parse the trace into compact arrays (keeps the RSS of the input small)."""
    pos, dels, texts = array("l"), array("l"), []
    with open(path) as f:
        for line in f:
            p, d, t = json.loads(line)
            pos.append(p)
            dels.append(d)
            texts.append(t)
    final_path = path[:-len(".jsonl")] + ".final.txt" if path.endswith(".jsonl") else None
    final = None
    if final_path and os.path.exists(final_path):
        with open(final_path) as f:
            final = f.read()
    return pos, dels, texts, final


def gen_random(n, count=10_000, seed=1):
    """W1.random: [(is_insert, pos, value)], value = op index k."""
    rng, length, ops = SplitMix64(seed), n, []
    for k in range(count):
        insert = rng.next() % 2 == 0 or length == 0
        if insert:
            ops.append((True, rng.below(length + 1), k))
            length += 1
        else:
            ops.append((False, rng.below(length), k))
            length -= 1
    return ops


def apply_flat(model, ops):
    for is_ins, p, v in ops:
        if is_ins:
            model.insert(p, v)
        else:
            del model[p]
    return model


def gen_moves(n, count, seed):
    """W4: [(from, to, value)]; value is the moved item (known to the app).
    Also returns the expected final list."""
    rng, model, ops = SplitMix64(seed), list(range(n)), []
    for _ in range(count):
        f = rng.below(n)
        t = rng.below(n)
        v = model.pop(f)
        model.insert(t, v)
        ops.append((f, t, v))
    return ops, model


def gen_churn(count, live=1_000, seed=12):
    """W12.churn: count inserts/deletes keeping the list near `live` items (same draws as the
    Swift genChurn): op k inserts value live + k at below(len + 1) when len == 0 or
    below(2 * live) >= len, else deletes at below(len).  Returns [(is_insert, pos, value)]."""
    rng = SplitMix64(seed)
    n, ops = live, []
    for k in range(count):
        if n == 0 or rng.below(2 * live) >= n:
            ops.append((True, rng.below(n + 1), live + k))
            n += 1
        else:
            ops.append((False, rng.below(n), live + k))
            n -= 1
    return ops


def gen_sections(n_sections=100, per=100, count=100_000, seed=5):
    """W5: ops are ("S", from, to) section moves or ("I", s, from, d, to, value)
    item moves.  Sections are addressed by their *current* index."""
    rng = SplitMix64(seed)
    model = [[s * per + i for i in range(per)] for s in range(n_sections)]
    ops = []
    for _ in range(count):
        if rng.below(10) == 0:
            f = rng.below(n_sections)
            t = rng.below(n_sections)
            model.insert(t, model.pop(f))
            ops.append(("S", f, t))
        else:
            s = rng.below(n_sections)
            while not model[s]:
                s = rng.below(n_sections)
            f = rng.below(len(model[s]))
            d = rng.below(n_sections)
            t = rng.below(len(model[d]) + 1) if d != s else rng.below(len(model[s]))
            v = model[s].pop(f)
            model[d].insert(t, v)
            ops.append(("I", s, f, d, t, v))
    return ops, model


# --------------------------------------------------------------------------
# Engines.  Each one implements the same small interface; the timed loops
# (trace / flat / moves / sections) are written per engine so that the loop
# body is just native calls.
# --------------------------------------------------------------------------
class LoroEngine:
    """LoroList or LoroMovableList in a LoroDoc.  Loro keeps an implicit
    auto-commit transaction open; we commit once at the end of a timed loop
    (commit is inside the timed section)."""

    def __init__(self, movable, peer=1):
        self.movable = movable
        self.doc = LoroDoc()
        self.doc.peer_id = peer
        self.list = self.doc.get_movable_list("list") if movable else self.doc.get_list("list")

    def fresh(self, peer):
        return LoroEngine(self.movable, peer)

    def build(self, values):  # untimed: the Python binding has no bulk insert
        ins = self.list.insert
        for i, v in enumerate(values):
            ins(i, v)
        self.doc.commit()

    def run_trace(self, pos, dels, texts, lo=0, hi=None):
        ins, rem = self.list.insert, self.list.delete
        for k in range(lo, len(pos) if hi is None else hi):
            p, d = pos[k], dels[k]
            if d:
                rem(p, d)
            for ch in texts[k]:
                ins(p, ch)
                p += 1
        self.doc.commit()

    def run_flat(self, ops):
        ins, rem = self.list.insert, self.list.delete
        for is_ins, p, v in ops:
            if is_ins:
                ins(p, v)
            else:
                rem(p, 1)
        self.doc.commit()

    def run_moves(self, ops):
        if self.movable:
            mov = self.list.mov
            for f, t, _v in ops:
                mov(f, t)
        else:
            ins, rem = self.list.insert, self.list.delete
            for f, t, v in ops:
                rem(f, 1)
                ins(t, v)
        self.doc.commit()

    # sections: a (movable) list of (movable) list containers
    def build_sections(self, model):
        Kind = LoroMovableList if self.movable else LoroList
        self.root = self.doc.get_movable_list("sections") if self.movable else self.doc.get_list("sections")
        self.secs = []
        for s, items in enumerate(model):
            c = self.root.insert_container(s, Kind())
            for i, v in enumerate(items):
                c.insert(i, v)
            self.secs.append(c)
        self.doc.commit()

    def run_sections(self, ops):
        secs, root = self.secs, self.root
        Kind = LoroMovableList if self.movable else LoroList
        for op in ops:
            if op[0] == "S":
                _, f, t = op
                if self.movable:
                    root.mov(f, t)
                    secs.insert(t, secs.pop(f))
                else:  # no move: delete the section, insert a copy of it
                    items = secs[f].to_vec()
                    root.delete(f, 1)
                    c = root.insert_container(t, Kind())
                    for i, v in enumerate(items):
                        c.insert(i, v)
                    secs.pop(f)
                    secs.insert(t, c)
            else:
                _, s, f, d, t, v = op
                if s == d and self.movable:
                    secs[s].mov(f, t)
                else:
                    secs[s].delete(f, 1)
                    secs[d].insert(t, v)
        self.doc.commit()

    def section_values(self):
        return [c.to_vec() for c in self.secs]

    def values(self):
        return self.list.to_vec()

    def length(self):
        return len(self.list)

    def export_history(self):
        return self.doc.export(ExportMode.Updates(VersionVector()))

    def export_snapshot(self):
        return self.doc.export(ExportMode.Snapshot())

    def load(self, data):
        self.doc.import_(data)

    # incremental sync
    def version(self):
        return self.doc.oplog_vv

    def delta_since(self, version):
        return self.doc.export(ExportMode.Updates(version))

    def stream_begin(self):
        pass

    def stream_delta(self, last):
        """Return (delta bytes, new version)."""
        return self.doc.export(ExportMode.Updates(last)), self.doc.oplog_vv


class YrsEngine:
    """pycrdt.Array.  Every logical op (trace line, random op, move) is one Yrs
    transaction: create_transaction() ... commit(); drop().  (A single huge
    transaction is quadratic in Yrs: 20k appends take ~9 s.)"""

    def __init__(self, peer=1):
        self.doc = pycrdt.Doc(client_id=peer)
        self.arr = self.doc.get("list", type=pycrdt.Array)
        self.native = self.arr.integrated
        self.txn = self.doc._doc.create_transaction

    def fresh(self, peer):
        return YrsEngine(peer)

    def build(self, values, chunk=10):  # untimed; chunks of 10 inserts per txn are fastest
        ins, ct = self.native.insert, self.txn
        for s in range(0, len(values), chunk):
            x = ct()
            for i in range(s, min(len(values), s + chunk)):
                ins(x, i, values[i])
            x.commit()
            x.drop()

    def run_trace(self, pos, dels, texts, lo=0, hi=None, per_txn=1):
        ins, rem, ct = self.native.insert, self.native.remove_range, self.txn
        hi = len(pos) if hi is None else hi
        for s in range(lo, hi, per_txn):
            x = ct()
            for k in range(s, min(hi, s + per_txn)):
                p, d = pos[k], dels[k]
                if d:
                    rem(x, p, d)
                for ch in texts[k]:
                    ins(x, p, ch)
                    p += 1
            x.commit()
            x.drop()

    def run_flat(self, ops):
        ins, rem, ct = self.native.insert, self.native.remove_range, self.txn
        for is_ins, p, v in ops:
            x = ct()
            if is_ins:
                ins(x, p, v)
            else:
                rem(x, p, 1)
            x.commit()
            x.drop()

    def run_moves(self, ops):  # no move in Yrs: delete + insert in one txn
        ins, rem, ct = self.native.insert, self.native.remove_range, self.txn
        for f, t, v in ops:
            x = ct()
            rem(x, f, 1)
            ins(x, t, v)
            x.commit()
            x.drop()

    def build_sections(self, model):
        self.root = self.doc.get("sections", type=pycrdt.Array).integrated
        self.secs = []
        for s, items in enumerate(model):
            x = self.txn()
            c = self.root.insert_array_prelim(x, s)
            for i, v in enumerate(items):
                c.insert(x, i, v)
            x.commit()
            x.drop()
            self.secs.append(c)

    def run_sections(self, ops):
        secs, root, ct = self.secs, self.root, self.txn
        for op in ops:
            x = ct()
            if op[0] == "S":  # no move: read, delete, re-insert a copy
                _, f, t = op
                items = json.loads(secs[f].to_json(x))
                root.remove_range(x, f, 1)
                c = root.insert_array_prelim(x, t)
                for i, v in enumerate(items):
                    c.insert(x, i, v)
                secs.pop(f)
                secs.insert(t, c)
            else:
                _, s, f, d, t, v = op
                secs[s].remove_range(x, f, 1)
                secs[d].insert(x, t, v)
            x.commit()
            x.drop()

    def section_values(self):
        x = self.txn()
        out = [[_num(v) for v in json.loads(c.to_json(x))] for c in self.secs]
        x.commit()
        x.drop()
        return out

    def values(self):
        return [_num(v) for v in self.arr.to_py()]

    def length(self):
        return len(self.arr)

    def export_history(self):
        return self.doc.get_update()

    def export_snapshot(self):  # Yrs has no separate snapshot format
        return self.doc.get_update()

    def load(self, data):
        self.doc.apply_update(data)

    def version(self):
        return self.doc.get_state()

    def delta_since(self, version):
        return self.doc.get_update(version)

    # Streaming uses the update each transaction emits (what Yjs providers
    # send).  get_update(state_vector) re-sends the whole delete set every
    # time (14.8 MB instead of 0.67 MB for W3.stream.100), so it is not used.
    def stream_begin(self):
        self._updates = []
        self._sub = self.doc.observe(lambda ev: self._updates.append(ev.update))

    def stream_delta(self, last):
        ups, self._updates = self._updates, []
        if len(ups) == 1:
            return ups[0], None
        return pycrdt.merge_updates(*ups), None


def _ver(pkg):
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _num(v):
    """pycrdt returns numbers as floats; the workloads store small ints."""
    return int(v) if isinstance(v, float) else v


def make_engine(name, peer=1):
    if name == "loro-list":
        return LoroEngine(False, peer)
    if name == "loro-movable":
        return LoroEngine(True, peer)
    if name == "yrs":
        return YrsEngine(peer)
    raise SystemExit(f"unknown engine {name}")


# --------------------------------------------------------------------------
# Workloads.  Each returns (metrics, ops, ok, note).
# --------------------------------------------------------------------------
TRACE_LIVE = 104_852  # final length of the automerge-paper document (workloads use their replay's)


BUDGET_S = 120.0  # --budget: wall-clock cap for one timed loop (Yrs slows down a lot)
# Repetition (WORKLOADS.md): best of up to RUNS (W1 runs), LOADS (W2 exports and loads, W4.moves
# load_ms) or MOVE_RUNS (W4.moves, W4.merge) runs, no new run after REPEAT_S seconds; --reps N
# (REPS) caps them all.
REPS, REPEAT_S = 10, 10.0
RUNS, LOADS, MOVE_RUNS = 10, 5, 3


def timed(run, total, budget=None):
    """Call run(lo, hi) over [0, total) in ~100 chunks until done or the time
    budget is spent.  Returns (elapsed ns, ops done)."""
    budget_ns = (BUDGET_S if budget is None else budget) * NS
    chunk = max(1, total // 100)
    t0 = time.perf_counter_ns()
    done = 0
    while done < total:
        hi = min(total, done + chunk)
        run(done, hi)
        done = hi
        if time.perf_counter_ns() - t0 > budget_ns:
            break
    return time.perf_counter_ns() - t0, done


def over_budget(metrics, done, total):
    """Mark a run stopped by the budget: rates are measured on the done prefix,
    totals are linear extrapolations (lower bounds: cost per op was growing)."""
    metrics["lower_bound"] = True
    metrics["ops_done"] = done
    return (f" STOPPED at the {BUDGET_S:.0f} s budget after {done} of {total} ops;"
            " ms is extrapolated linearly (a lower bound)")


def timed_ms(fn):
    """(ms, result) of one call."""
    t0 = time.perf_counter_ns()
    r = fn()
    return (time.perf_counter_ns() - t0) / 1e6, r


def load_timed(eng, data):
    """Import into a fresh doc and read its length (so lazy decoders pay)."""
    fresh = eng.fresh(99)
    t0 = time.perf_counter_ns()
    fresh.load(data)
    n = fresh.length()
    return (time.perf_counter_ns() - t0) / 1e6, n


def py_loop_overhead(pos, dels, texts):
    """ns/op of the W1.trace loop with a no-op C builtin in place of the engine."""
    nop = {}.get
    t0 = time.perf_counter_ns()
    for k in range(len(pos)):
        p, d = pos[k], dels[k]
        if d:
            nop(p, d)
        for ch in texts[k]:
            nop(p, ch)
            p += 1
    return (time.perf_counter_ns() - t0) / len(pos)


def repeat_best(run_once, reps, first=None, stop=None):
    """The repetition rule (the same as Repeat.fastest in the Swift bench): call
    run_once() -> (time, ...) at most min(reps, --reps) times, no new call once
    REPEAT_S seconds have passed since the first started or once stop(result)
    is true; keep the fastest.  first(result) sees the first result right after
    it.  Returns (fastest result, number of runs)."""
    best, runs = None, 0
    t0 = time.perf_counter()
    for _ in range(max(1, min(reps, REPS))):
        r = run_once()
        runs += 1
        if runs == 1 and first is not None:
            first(r)
        if best is None or r[0] < best[0]:
            best = r
        if (stop is not None and stop(r)) or time.perf_counter() - t0 > REPEAT_S:
            break
    return best, runs


def best_ms(reps, run_once):
    """run_once() -> (ms, state): (fastest ms, its state, number of runs)."""
    (ms, state), runs = repeat_best(run_once, reps)
    return ms, state, runs


def rep_note(reps, runs, what="runs"):
    return f"best of up to {max(1, min(reps, REPS))} {what} ({runs} done)"


def best_of(run_once):
    """W1: repeat run_once() -> (ns_per_op, metrics, ...) on fresh documents;
    keep the fastest.  A run stopped by the budget ("lower_bound") is never
    repeated.  Memory is the first run's: later runs reuse memory the allocator
    kept from the freed earlier documents.  Returns (fastest result, runs)."""
    memory = {}

    def first(r):
        memory.update({k: v for k, v in r[1].items() if k.endswith("rss_bytes")})
        memory["peak_rss_bytes"] = rss_peak() - BASE_RSS
        memory["first_run_ns_per_op"] = r[0]

    best, runs = repeat_best(run_once, RUNS, first, lambda r: "lower_bound" in r[1])
    best[1].update(memory)
    return best, runs


def w1_trace(engine, args, keep=False):
    pos, dels, texts, final = load_trace(args.trace)
    total = len(pos)

    def once():
        reset_peak()
        before = rss_now()
        eng = make_engine(engine)
        ns, done = timed(lambda lo, hi: eng.run_trace(pos, dels, texts, lo, hi), total)
        m = {"ns_per_op": ns / done,
             "doc_peak_rss_bytes": rss_peak() - before}  # doc memory, before export/verify
        if done < total:
            m["lower_bound"] = True
        return ns / done, m, done, eng

    (_, m, done, eng), runs = (once(), 1) if keep else best_of(once)
    got = "".join(eng.values())
    ok = final is not None and got == final and done == total
    m.update(live_items=len(got), py_loop_ns_per_op=py_loop_overhead(pos, dels, texts))
    note = ("one trace line = one Yrs transaction" if engine == "yrs"
            else "one Loro commit per 1% of the trace (timed)")
    note += "" if keep else "; " + rep_note(RUNS, runs)
    if done < total:
        note += over_budget(m, done, total)
    if keep:
        return eng, m, total, ok, note
    return m, total, ok, note


def w1_random(engine, n):
    ops = gen_random(n)

    def once():
        eng = make_engine(engine)
        eng.build(list(range(n)))  # untimed
        ns, done = timed(lambda lo, hi: eng.run_flat(ops[lo:hi]), len(ops))
        m = {"ns_per_op": ns / done}
        if done < len(ops):
            m["lower_bound"] = True
        return ns / done, m, done, eng

    (_, m, done, eng), runs = best_of(once)
    note = "build untimed (one insert call per item); " + rep_note(RUNS, runs)
    if done < len(ops):
        return m, done, False, note + over_budget(m, done, len(ops))
    if n <= 100_000:
        ok = eng.values() == apply_flat(list(range(n)), ops)
    else:  # the Python model would take seconds: check the length only
        ok = eng.length() == n + sum(1 if o[0] else -1 for o in ops)
    return m, len(ops), ok, note


def w2_history(engine, args):
    eng, m1, _, ok, note1 = w1_trace(engine, args, keep=True)
    if m1.get("lower_bound"):
        return {}, 0, False, "W1.trace did not finish:" + note1
    # Each timing: best of up to LOADS; every load goes into a fresh document.
    eh, hist, eh_runs = best_ms(LOADS, lambda: timed_ms(eng.export_history))
    es, snap, es_runs = best_ms(LOADS, lambda: timed_ms(eng.export_snapshot))
    lh, nh, lh_runs = best_ms(LOADS, lambda: load_timed(eng, hist))
    ls, ns_, ls_runs = best_ms(LOADS, lambda: load_timed(eng, snap))
    m = {"history_bytes": len(hist), "snapshot_bytes": len(snap),
         "load_history_ms": lh, "load_snapshot_ms": ls,
         "export_history_ms": eh, "export_snapshot_ms": es}
    live = eng.length()  # the replayed trace's own length, so that --trace may name another
    ok = ok and nh == live and ns_ == live
    note = ("Yrs has no snapshot format: snapshot = the same get_update() as history"
            if engine == "yrs" else "history = ExportMode.Updates(empty vv), snapshot = ExportMode.Snapshot")
    note += (f"; load_history_ms {rep_note(LOADS, lh_runs, 'loads')}, load_snapshot_ms {rep_note(LOADS, ls_runs, 'loads')},"
             f" exports {rep_note(LOADS, min(eh_runs, es_runs))}")
    return m, 1, ok, note


def w3_stream(engine, args, every):
    pos, dels, texts, final = load_trace(args.trace)
    a, b = make_engine(engine, 1), make_engine(engine, 2)
    a.stream_begin()
    last = a.version() if engine != "yrs" else None
    total = deltas = 0
    n = len(pos)
    t0 = time.perf_counter_ns()
    for lo in range(0, n, every):
        hi = min(n, lo + every)
        if engine == "yrs":
            a.run_trace(pos, dels, texts, lo, hi, per_txn=every)  # one txn per delta
        else:
            a.run_trace(pos, dels, texts, lo, hi)
        delta, last = a.stream_delta(last)
        total += len(delta)
        deltas += 1
        b.load(delta)
        if time.perf_counter_ns() - t0 > BUDGET_S * NS and hi < n:
            break
    ms = (time.perf_counter_ns() - t0) / 1e6
    ok = final is not None and "".join(b.values()) == final
    note = (f"{deltas} deltas; Yrs delta = the update emitted by one transaction of {every} lines"
            if engine == "yrs" else f"{deltas} deltas; delta = export(Updates(vv of last export))")
    m = {"ms": ms, "bytes": total, "deltas": deltas}
    if hi < n:
        m["ms"] = ms * n / hi
        note += over_budget(m, hi, n)
    return m, n, ok, note


def w4_moves(engine):
    n, count = 10_000, 100_000
    ops, expect = gen_moves(n, count, 4)
    # The move loop: best of up to MOVE_RUNS runs, each on a freshly built doc
    # (build untimed); a run stopped by the budget is not repeated.  Every
    # complete run's final list is checked; history and memory are the first run's.
    state = {"runs": 0, "all_ok": True}

    def once():
        first = state["runs"] == 0
        state["runs"] += 1
        if first:
            reset_peak()
        before = rss_now()
        eng = make_engine(engine)
        eng.build(list(range(n)))
        ns, done = timed(lambda lo, hi: eng.run_moves(ops[lo:hi]), count)
        if first:
            state["doc_peak"] = rss_peak() - before
            state["peak"] = rss_peak() - BASE_RSS  # as in W1: right after the first run
        if done == count:
            state["all_ok"] = state["all_ok"] and eng.values() == expect
            if first:
                state["hist"] = eng.export_history()
        # a stopped run is a lower bound, never "faster" than a complete one
        return ns if done == count else float("inf"), ns, done

    (_, ns, done), runs = repeat_best(once, MOVE_RUNS, stop=lambda r: r[2] < count)
    how = "LoroMovableList.mov" if engine == "loro-movable" else "delete + insert"
    m = {"ms": ns / 1e6 * count / done, "ns_per_op": ns / done, "doc_peak_rss_bytes": state["doc_peak"],
         "peak_rss_bytes": state["peak"]}
    if done < count:  # no history of a partial run
        return m, done, False, f"move = {how};" + over_budget(m, done, count)
    hist = state["hist"]
    m["history_bytes"] = len(hist)
    template = make_engine(engine)  # load_timed loads into template.fresh(99)
    m["load_ms"], ln, load_runs = best_ms(LOADS, lambda: load_timed(template, hist))
    ok = state["all_ok"] and ln == n
    return m, count, ok, (f"move = {how}; ms {rep_note(MOVE_RUNS, runs)} on fresh documents,"
                          f" load_ms {rep_note(LOADS, load_runs, 'loads')}")


def w4_merge(engine):
    n = 10_000
    ops_a, _ = gen_moves(n, n, 41)
    ops_b, _ = gen_moves(n, n, 42)

    def once():
        """One run on fresh replicas (setup untimed): (ms, moves done, result);
        a run stopped by the budget returns (inf, done, extrapolated ms)."""
        a = make_engine(engine, 1)
        a.build(list(range(n)))
        b = a.fresh(2)
        b.load(a.export_history())
        fork = a.version()
        t0 = time.perf_counter_ns()
        ns_a, done_a = timed(lambda lo, hi: a.run_moves(ops_a[lo:hi]), n, BUDGET_S / 2)
        ns_b, done_b = timed(lambda lo, hi: b.run_moves(ops_b[lo:hi]), n, BUDGET_S / 2)
        if done_a < n or done_b < n:
            # extrapolated (a lower bound); repeat_best stops after a stopped run
            return float("inf"), done_a + done_b, (ns_a * n / done_a + ns_b * n / done_b) / 1e6
        ua, ub = a.delta_since(fork), b.delta_since(fork)
        a.load(ub)
        b.load(ua)
        ms = (time.perf_counter_ns() - t0) / 1e6
        va = a.values()
        return ms, 2 * n, (va, va == b.values(), len(ua) + len(ub))

    results, peak = [], {}

    def run_once():
        r = once()
        results.append(r)
        return r

    (ms, done, res), runs = repeat_best(run_once, MOVE_RUNS, stop=lambda r: r[1] < 2 * n,
                                       first=lambda r: peak.update(peak_rss_bytes=rss_peak() - BASE_RSS))
    if done < 2 * n:
        m = {"ms": res, **peak}
        return m, done, False, "moves" + over_budget(m, done, 2 * n)
    va, converged, exchange = results[0][2]
    unique = sorted(va) == list(range(n))
    all_same = all(r[1] == 2 * n and r[2][0] == va and r[2][1] for r in results)
    note = f"converged={converged}, items after merge={len(va)}, each value once={unique}"
    if engine != "loro-movable":
        note += " (move = delete + insert: concurrent moves of one item duplicate it)"
    note += f"; ms {rep_note(MOVE_RUNS, runs)} on fresh replicas"
    if not all_same:
        note += "; the runs did not all end in the same converged list"
    return {"ms": ms, "items_after_merge": len(va), "exchange_bytes": exchange, **peak}, 2 * n, \
        converged and unique and all_same, note


def w5_sections(engine):
    ops, expect = gen_sections()
    eng = make_engine(engine)
    eng.build_sections([[s * 100 + i for i in range(100)] for s in range(100)])
    ns, done = timed(lambda lo, hi: eng.run_sections(ops[lo:hi]), len(ops))
    m = {"ms": ns / 1e6 * len(ops) / done, "ns_per_op": ns / done}
    ok = done == len(ops) and eng.section_values() == expect
    if engine == "loro-movable":
        note = "sections: LoroMovableList of LoroMovableList; in-section = mov, cross-section = delete + insert"
    else:
        note = "no move: item move = delete + insert; section move = delete the section + insert a copy"
    if done < len(ops):
        note += over_budget(m, done, len(ops))
    return m, done, ok, note


def w6_memory(engine, args):
    """Memory per item from the doc RSS deltas of W1.trace and W4.moves, each run
    in its own process.  Approximation (see WORKLOADS.md):
      bytes_per_live_item    = W1.trace doc RSS / 104,852 live items
      bytes_per_deleted_item = W4.moves doc RSS / dead positions (one per move)
    i.e. each attributes all growth (state, history, tombstones) to one kind of item."""
    res = {}
    for w in ("W1.trace", "W4.moves"):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--engine", engine,
                              "--workload", w, "--trace", args.trace,
                              "--budget", str(BUDGET_S), "--reps", "1"],
                             check=True, capture_output=True, text=True).stdout
        res[w] = json.loads(out)
    r1 = res["W1.trace"]["metrics"]["doc_peak_rss_bytes"]
    r4 = res["W4.moves"]["metrics"]["doc_peak_rss_bytes"]
    # if W4.moves hit the budget its RSS was measured after fewer moves
    moves = res["W4.moves"]["metrics"].get("ops_done", 100_000)
    note = "W1.trace doc RSS / live items; W4.moves doc RSS / moves (see WORKLOADS.md)"
    if moves != 100_000:
        note += f"; W4.moves stopped after {moves} moves, divided by that count"
    live = res["W1.trace"]["metrics"].get("live_items", TRACE_LIVE)
    return ({"bytes_per_live_item": r1 / live, "bytes_per_deleted_item": r4 / moves,
             "w1_doc_peak_rss_bytes": r1, "w4_doc_peak_rss_bytes": r4},
            0, res["W1.trace"]["ok"], note)


# W7: out-of-order delivery.  The stream is n + 1 operations in ListSync (0 = its section, 1 + k
# = insert k); Loro and Yrs have no section to create (the root list exists), so they get the n
# inserts, in the same relative order (index 0 is skipped).
OOO_SIZES = (10_000, 100_000)
OOO_RUNS = 3  # best of up to 3 runs, as W4.moves


def gen_out_of_order(n):
    """(positions, values, reverse order, shuffled order): insert k goes at below(k + 1) of
    SplitMix64(7) with value chr(97 + k % 26); the orders are of 0..n (see above); shuffled =
    Fisher-Yates by SplitMix64(77): for i from n down to 1, swap i with below(i + 1)."""
    rng = SplitMix64(7)
    positions = [rng.below(k + 1) for k in range(n)]
    values = [chr(97 + k % 26) for k in range(n)]
    shuffled = list(range(n + 1))
    srng = SplitMix64(77)
    for i in range(n, 0, -1):
        j = srng.below(i + 1)
        shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
    return positions, values, list(range(n, -1, -1)), shuffled


def ooo_updates(engine, positions, values):
    """Untimed: the sender (peer 1) makes the inserts, one update each.  Returns (sender, updates).
    Loro: export(Updates(from_=version before the insert)); Yrs: get_update(state vector before)."""
    eng = make_engine(engine, 1)
    updates = []
    if engine == "yrs":
        ins, ct, native = eng.native.insert, eng.txn, eng.doc._doc
        for p, v in zip(positions, values):
            x = ct()
            sv = native.get_state(x)
            x.commit()
            x.drop()
            x = ct()
            ins(x, p, v)
            x.commit()
            x.drop()
            x = ct()
            updates.append(native.get_update(x, sv))
            x.commit()
            x.drop()
    else:
        doc, ins = eng.doc, eng.list.insert
        for p, v in zip(positions, values):
            vv = doc.oplog_vv
            ins(p, v)
            doc.commit()
            updates.append(doc.export(ExportMode.Updates(from_=vv)))
    return eng, updates


def ooo_receive(receiver, engine, updates):
    """run(lo, hi) for timed(): apply updates[lo:hi], one import_ / apply_update call each
    (Yrs: one transaction per update, through the native binding as the other Yrs loops)."""
    if engine == "yrs":
        apply, ct = receiver.doc._doc.apply_update, receiver.txn

        def run(lo, hi):
            for k in range(lo, hi):
                x = ct()
                apply(x, updates[k])
                x.commit()
                x.drop()
    else:
        imp = receiver.doc.import_

        def run(lo, hi):
            for k in range(lo, hi):
                imp(updates[k])
    return run


def ooo_values(eng, engine):
    """The list, read in one native call (Yrs: to_json; pycrdt's to_py() reads item by item, each
    read walking the blocks: quadratic on a list of 100,000 one-item blocks)."""
    if engine == "yrs":
        x = eng.txn()
        out = json.loads(eng.native.to_json(x))
        x.commit()
        x.drop()
        return out
    return eng.values()


def ooo_synced(sender, receiver, engine):
    """The receiver holds everything the sender made (nothing left waiting): equal versions."""
    if engine == "yrs":
        return receiver.doc.get_state() == sender.doc.get_state()
    return receiver.doc.oplog_vv == sender.doc.oplog_vv


def w7_out_of_order(engine, order, n):
    positions, values, reverse, shuffled = gen_out_of_order(n)
    sender, updates = ooo_updates(engine, positions, values)
    expect = ooo_values(sender, engine)
    delivery = [updates[i - 1] for i in (reverse if order == "reverse" else shuffled) if i != 0]
    state = {"all_ok": True}

    def once():
        receiver = make_engine(engine, 2)
        ns, done = timed(ooo_receive(receiver, engine, delivery), n)
        if done == n:
            ok = ooo_synced(sender, receiver, engine) and ooo_values(receiver, engine) == expect
            state["all_ok"] = state["all_ok"] and ok
            if not ok and "items" not in state:
                state["items"] = receiver.length()
        return ns if done == n else float("inf"), ns, done

    (_, ns, done), runs = repeat_best(once, OOO_RUNS, stop=lambda r: r[2] < n)
    m = {"ms": ns / 1e6 * n / done, "ns_per_op": ns / done,
         "update_bytes": sum(len(u) for u in updates)}
    how = ("export(ExportMode.Updates(from_=vv before)) per insert, receiver import_ per update"
           if engine != "yrs" else
           "get_update(state vector before) per insert, receiver apply_update per update (one txn each)")
    note = (f"{n} random inserts received one update at a time, "
            + ("newest first" if order == "reverse" else "in a seeded shuffle (SplitMix64 seed 77)")
            + f"; final list starts {''.join(expect[:12])}"
            + f"; {how}; ok = same version (nothing pending) and same list as the sender")
    if done < n:
        return m, done, False, note + ";" + over_budget(m, done, n)
    note += f"; ms {rep_note(OOO_RUNS, runs)} on fresh receivers"
    if "items" in state:  # Yrs, shuffled: updates left waiting although all of them arrived
        m["receiver_items"] = state["items"]
        note += (f"; FAILED: after all {n} updates the receiver shows {state['items']} items and an older"
                 " version than the sender (the rest stayed pending)")
    return m, n, state["all_ok"], note


# --------------------------------------------------------------------------
# W8.concurrent: the clownschool concurrent trace (WORKLOADS.md, W8)
# --------------------------------------------------------------------------
CONCURRENT_TRACE = "clownschool.concurrent"
W8_RUNS = 5  # best of up to 5 runs, as W2's loads


def load_concurrent(trace_path, concurrent_trace=None, deliver=None, seed=47):
    """Parse the concurrent trace (--concurrent-trace PATH, else Traces/clownschool.concurrent.jsonl
    next to --trace, else in Benchmarks/Traces) and plan the deliveries (untimed, engine
    independent).  Returns (agents, patches, plan, merge, final, n): plan[i] = the other agents'
    transactions in transaction i's past that its agent's replica has not imported yet, in trace
    order (a causal order); merge[a] = what replica a still lacks at the end; final = the text of
    PATH.final.txt, None when there is none."""
    if concurrent_trace:
        path = concurrent_trace
    else:
        for d in (os.path.dirname(os.path.abspath(trace_path)), os.path.join(HERE, "..", "Traces")):
            path = os.path.join(d, CONCURRENT_TRACE + ".jsonl")
            if os.path.exists(path):
                break
        else:
            raise FileNotFoundError(f"{CONCURRENT_TRACE}.jsonl not next to {trace_path} nor in Benchmarks/Traces")
    agents, parents, patches = [], [], []
    with open(path) as f:
        for line in f:
            a, ps, pt = json.loads(line)
            agents.append(a)
            parents.append(ps)
            patches.append([(p, d, t) for p, d, t in pt])
    n = max(agents) + 1
    seq, seqno, past = [[] for _ in range(n)], [], []
    for i, a in enumerate(agents):  # version vector of each transaction's past
        v = [0] * n
        for p in parents[i]:
            v = [max(x, y) for x, y in zip(v, past[p])]
            v[agents[p]] = max(v[agents[p]], seqno[p] + 1)
        if v[a] != len(seq[a]):
            raise ValueError(f"line {i + 1}: agent {a}'s previous transaction is not in its past")
        seqno.append(len(seq[a]))
        seq[a].append(i)
        past.append(v)
    delivered = [[0] * n for _ in range(n)]
    plan = []
    for i, a in enumerate(agents):
        todo = []
        for b in range(n):
            if b != a and delivered[a][b] < past[i][b]:
                todo += seq[b][delivered[a][b]:past[i][b]]
                delivered[a][b] = past[i][b]
        plan.append(sorted(todo))
    merge = [sorted(j for b in range(n) if b != a for j in seq[b][delivered[a][b]:]) for a in range(n)]
    final_path = path[:-len(".jsonl")] + ".final.txt"
    final = open(final_path).read() if os.path.exists(final_path) else None
    if deliver is not None:
        plan, merge = plan_like_listsync(agents, past, seq, n, deliver, seed)
    return agents, patches, plan, merge, final, n


def _shuffle(xs, rng):
    """ConcurrentReplay's in-place shuffle: k from the last index down to 1, swap(k, below(k + 1))."""
    k = len(xs) - 1
    while k > 0:
        j = rng.below(k + 1)
        xs[k], xs[j] = xs[j], xs[k]
        k -= 1


def plan_like_listsync(agents, past, seq, n, deliver, seed):
    """--deliver authors|transactions: the delivery order of listsync-bench's W8.late.AGENTS.OPS
    (ConcurrentReplay.Delivery.authors(seed:)) or W8.scattered.AGENTS.OPS (.transactions(seed:)),
    ported step for step with the same SplitMix64 draws, so that both engines receive the same
    transactions in the same order.  Returns (plan, Rounds): plan[i] = the transactions delivered to
    transaction i's agent before it, in delivery order; the Rounds = the final merge as
    (replica, transactions) steps in order."""
    rng = SplitMix64(seed)
    delivered = [[0] * n for _ in range(n)]

    def missing_authors(a, version):
        order = [b for b in range(n) if b != a and delivered[a][b] < version[b]]
        _shuffle(order, rng)
        return order

    def missing_transactions(a, version):
        lst = []
        for b in range(n):
            if b != a:
                lst += seq[b][delivered[a][b]:version[b]]
                delivered[a][b] = max(delivered[a][b], version[b])
        _shuffle(lst, rng)
        return lst

    plan = []
    for i, a in enumerate(agents):
        version = past[i]
        if deliver == "authors":
            todo = []
            for b in missing_authors(a, version):
                todo += seq[b][delivered[a][b]:version[b]]
                delivered[a][b] = version[b]
        else:
            todo = missing_transactions(a, version)
        plan.append(todo)
        delivered[a][a] += 1
    full = [len(s) for s in seq]
    merge = Rounds()
    if deliver == "authors":  # round k: every replica the k-th agent of its own shuffled order
        orders = [missing_authors(a, full) for a in range(n)]
        for k in range(max((len(o) for o in orders), default=0)):
            for a in range(n):
                if k < len(orders[a]):
                    b = orders[a][k]
                    merge.append((a, seq[b][delivered[a][b]:]))
                    delivered[a][b] = full[b]
    else:  # 64 rounds: every replica the k-th slice of its own shuffled order
        orders = [missing_transactions(a, full) for a in range(n)]
        for k in range(Scattered.ROUNDS):
            for a in range(n):
                c = len(orders[a])
                merge.append((a, orders[a][c * k // Scattered.ROUNDS:c * (k + 1) // Scattered.ROUNDS]))
    return plan, merge


class Scattered(list):
    """--scatter SEED (Loro only): the final merge lists, each shuffled, delivered in ROUNDS rounds
    with the replicas interleaved, as listsync-bench's W8.scattered.AGENTS.OPS
    (ConcurrentReplay.Delivery.transactions): every replica's pending updates pile up at once."""
    ROUNDS = 64


class Rounds(list):
    """--deliver (Loro only): the final merge as (replica, transactions) steps, delivered in order
    (plan_like_listsync)."""


def w8_replay_loro(movable, agents, patches, plan, merge, n, budget_ns):
    """One timed replay on Loro: one LoroDoc per agent (peer ids 1..n); after each transaction its
    agent exports export(ExportMode.Updates(vv before the edits)); the others import_ it when it
    is delivered.  Returns (ns, transactions done, texts, RSS delta: before the replicas -> after
    the merge, all alive)."""
    before = rss_now()
    docs = []
    for k in range(n):
        d = LoroDoc()
        d.peer_id = k + 1
        docs.append(d)
    lists = [d.get_movable_list("list") if movable else d.get_list("list") for d in docs]
    imps = [d.import_ for d in docs]
    exps = [d.export for d in docs]
    commits = [d.commit for d in docs]
    inss = [x.insert for x in lists]
    rems = [x.delete for x in lists]
    Updates = ExportMode.Updates
    updates = [None] * len(agents)
    t0 = time.perf_counter_ns()
    for i, a in enumerate(agents):
        imp = imps[a]
        for j in plan[i]:
            imp(updates[j])
        vv = docs[a].oplog_vv
        ins, rem = inss[a], rems[a]
        for p, d, text in patches[i]:
            if d:
                rem(p, d)
            for ch in text:
                ins(p, ch)
                p += 1
        commits[a]()
        updates[i] = exps[a](Updates(vv))
        if i % 1000 == 999 and time.perf_counter_ns() - t0 > budget_ns:
            return time.perf_counter_ns() - t0, i + 1, None, 0
    if isinstance(merge, Rounds):  # --deliver: listsync-bench's own order, step by step
        for a, js in merge:
            imp = imps[a]
            for j in js:
                imp(updates[j])
    elif isinstance(merge, Scattered):  # --scatter: 64 rounds, each replica its k-th slice in turn
        for k in range(Scattered.ROUNDS):
            for a in range(n):
                imp, m = imps[a], merge[a]
                for j in m[len(m) * k // Scattered.ROUNDS:len(m) * (k + 1) // Scattered.ROUNDS]:
                    imp(updates[j])
    else:
        for a in range(n):
            imp = imps[a]
            for j in merge[a]:
                imp(updates[j])
    ns = time.perf_counter_ns() - t0
    held = rss_now() - before
    return ns, len(agents), ["".join(x.to_vec()) for x in lists], held


def w8_replay_yrs(agents, patches, plan, merge, n, budget_ns):
    """One timed replay on Yrs (pycrdt, native binding): one Doc per agent (client ids 1..n); each
    transaction is one Yrs transaction; after it its agent sends get_update(state vector before
    the edits); the others apply_update it (one Yrs transaction each) when it is delivered.
    Returns (ns, transactions done, texts, RSS delta) as w8_replay_loro."""
    before = rss_now()
    docs = [pycrdt.Doc(client_id=k + 1) for k in range(n)]
    wrappers = [d.get("list", type=pycrdt.Array) for d in docs]
    arrs = [w.integrated for w in wrappers]
    nat = [d._doc for d in docs]
    cts = [d.create_transaction for d in nat]
    applies = [d.apply_update for d in nat]
    states = [d.get_state for d in nat]
    gets = [d.get_update for d in nat]
    inss = [x.insert for x in arrs]
    rems = [x.remove_range for x in arrs]
    updates = [None] * len(agents)
    t0 = time.perf_counter_ns()
    for i, a in enumerate(agents):
        ct, apply = cts[a], applies[a]
        for j in plan[i]:
            x = ct()
            apply(x, updates[j])
            x.commit()
            x.drop()
        x = ct()
        sv = states[a](x)
        ins, rem = inss[a], rems[a]
        for p, d, text in patches[i]:
            if d:
                rem(x, p, d)
            for ch in text:
                ins(x, p, ch)
                p += 1
        x.commit()
        x.drop()
        y = ct()
        updates[i] = gets[a](y, sv)
        y.commit()
        y.drop()
        if i % 1000 == 999 and time.perf_counter_ns() - t0 > budget_ns:
            return time.perf_counter_ns() - t0, i + 1, None, 0
    for a in range(n):
        ct, apply = cts[a], applies[a]
        for j in merge[a]:
            x = ct()
            apply(x, updates[j])
            x.commit()
            x.drop()
    ns = time.perf_counter_ns() - t0
    held = rss_now() - before
    texts = []
    for k in range(n):  # untimed check; the native to_json, not the slow wrapper's to_py
        x = cts[k]()
        texts.append("".join(json.loads(arrs[k].to_json(x))))
        x.commit()
        x.drop()
    return ns, len(agents), texts, held


def w8_concurrent(engine, args):
    if args.deliver is not None and engine == "yrs":
        raise ValueError("--deliver is implemented for Loro only")
    agents, patches, plan, merge, final, n = load_concurrent(args.trace, args.concurrent_trace,
                                                             args.deliver, args.seed)  # untimed
    if args.scatter is not None and args.deliver is not None:
        raise ValueError("--scatter and --deliver are two delivery orders: give one")
    if args.scatter is not None:  # shuffled transactions before each transaction and in the final merge
        rng = random.Random(args.scatter)
        for xs in plan + merge:
            rng.shuffle(xs)
        merge = Scattered(merge)
    total = len(agents)
    elem_ops = sum(d + len(t) for ps in patches for p, d, t in ps)
    budget_ns = BUDGET_S * NS
    state = {"all_ok": True}

    def once():
        if engine == "yrs":
            ns, done, texts, held = w8_replay_yrs(agents, patches, plan, merge, n, budget_ns)
        else:
            ns, done, texts, held = w8_replay_loro(engine == "loro-movable", agents, patches, plan, merge, n, budget_ns)
        state.setdefault("held", held)  # memory: the first run's (later runs reuse freed memory)
        # without a final.txt (a generated trace): every replica shows replica 1's text
        want = final if final is not None else (texts[0] if texts else None)
        state["all_ok"] = state["all_ok"] and done == total and all(t == want for t in texts)
        # a stopped run is a lower bound, never "faster" than a complete one
        return (ns if done == total else float("inf")), ns, done

    (_, ns, done), runs = repeat_best(once, W8_RUNS, stop=lambda r: r[2] < total)
    m = {"ms": ns / 1e6 * total / done, "ns_per_op": ns / done * total / elem_ops, "transactions": total,
         "memory_bytes": state["held"] // n, "replicas_rss_bytes": state["held"]}
    how = ("Yrs: one transaction per trace transaction, update = get_update(state vector before it),"
           " apply_update per delivered transaction" if engine == "yrs" else
           "Loro: update = export(ExportMode.Updates(oplog_vv before it)), import_ per delivered transaction")
    if args.deliver is not None:
        how += f"; delivered as listsync-bench's {args.deliver}(seed: {args.seed})"
    elif args.scatter is not None:
        how += f"; --scatter {args.scatter}"
    note = (f"{total} transactions, {elem_ops} element edits (ops), {n} replicas (ids 1..{n}); {how};"
            f" delivery plan computed untimed; every run checked (all replicas =="
            f" {'final.txt' if final is not None else 'replica 1, no final.txt'});"
            f" ms {rep_note(W8_RUNS, runs)} on fresh replicas; memory_bytes = RSS delta of the first run"
            f" (before the replicas -> after the merge, all alive, with the updates kept) / {n}, a proxy")
    if done < total:
        return m, done, False, note + over_budget(m, done, total)
    return m, elem_ops, state["all_ok"], note


# --------------------------------------------------------------------------
# W12.churn.N: 1,000 live items, N inserts/deletes by 3 replicas in turns of 1,000 (WORKLOADS.md)
# --------------------------------------------------------------------------
CHURN_SIZES = (100_000, 1_000_000)
CHURN_LIVE, CHURN_TURN, CHURN_REPLICAS = 1_000, 1_000, 3


class _ChurnLoro:
    """Loro side of W12: a turn is committed once; its update is export(Updates(vv before it))."""

    def __init__(self, peer, movable):
        self.doc = LoroDoc()
        self.doc.peer_id = peer
        self.list = self.doc.get_movable_list("list") if movable else self.doc.get_list("list")

    def turn(self, ops):
        vv = self.doc.oplog_vv
        ins, rem = self.list.insert, self.list.delete
        for is_ins, p, v in ops:
            if is_ins:
                ins(p, v)
            else:
                rem(p, 1)
        self.doc.commit()
        return self.doc.export(ExportMode.Updates(vv))

    def receive(self, update):
        self.doc.import_(update)

    def values(self):
        return self.list.to_vec()

    def snapshot(self):
        return self.doc.export(ExportMode.Snapshot())

    def history(self):
        return self.doc.export(ExportMode.Updates(VersionVector()))

    def shallow(self):
        """Loro's own history trimming: a shallow snapshot at the current frontiers (the state and
        no history before it), a reference for what compaction can reach."""
        return self.doc.export(ExportMode.ShallowSnapshot(self.doc.oplog_frontiers))


class _ChurnYrs:
    """Yrs side of W12: one transaction per op (as every Yrs loop here); a turn's update is the
    merge of its transactions' updates (doc.observe, what Yjs providers send: get_update(sv) would
    re-send the whole delete set every turn, see W3)."""

    def __init__(self, peer):
        self.eng = YrsEngine(peer)           # its run_flat: one transaction per op
        self.doc = self.eng.doc
        self.arr = self.eng.native
        self.nat = self.doc._doc
        self.ups = []
        self._sub = self.doc.observe(lambda ev: self.ups.append(ev.update))

    def turn(self, ops):
        self.ups.clear()
        self.eng.run_flat(ops)
        ups, self.ups = self.ups, []
        return ups[0] if len(ups) == 1 else pycrdt.merge_updates(*ups)

    def receive(self, update):
        x = self.nat.create_transaction()
        self.nat.apply_update(x, update)
        x.commit()
        x.drop()
        self.ups.clear()  # its own observer saw the applied update: not a local change

    def values(self):
        x = self.nat.create_transaction()
        out = [_num(v) for v in json.loads(self.arr.to_json(x))]
        x.commit()
        x.drop()
        return out

    def snapshot(self):  # Yrs has no separate snapshot format: the full-state update
        return self.doc.get_update()

    def history(self):
        return None


def w12_churn(engine, n):
    ops = gen_churn(n, CHURN_LIVE)  # untimed
    model = list(range(CHURN_LIVE))
    apply_flat(model, ops)
    before = rss_now()  # memory held by the replicas: RSS delta from here to the end of the run
    make = (lambda p: _ChurnYrs(p)) if engine == "yrs" else (lambda p: _ChurnLoro(p, engine == "loro-movable"))
    reps = [make(k + 1) for k in range(CHURN_REPLICAS)]
    init = reps[0].turn([(True, i, i) for i in range(CHURN_LIVE)])  # untimed: replica 1 builds
    for r in reps[1:]:
        r.receive(init)
    budget_ns = BUDGET_S * NS
    exchange = 0
    t0 = time.perf_counter_ns()
    done = 0
    while done < n:  # turn t: ops t*1000 .. t*1000+999 by replica t % 3, the 2 others receive
        hi = min(n, done + CHURN_TURN)
        maker = (done // CHURN_TURN) % CHURN_REPLICAS
        update = reps[maker].turn(ops[done:hi])
        exchange += len(update)
        for k, r in enumerate(reps):
            if k != maker:
                r.receive(update)
        done = hi
        if time.perf_counter_ns() - t0 > budget_ns:
            break
    ns = time.perf_counter_ns() - t0
    held = rss_now() - before
    snap, hist = reps[0].snapshot(), reps[0].history()
    lists = [r.values() for r in reps]
    if done < n:
        model = list(range(CHURN_LIVE))
        apply_flat(model, ops[:done])
    converged = all(x == lists[0] for x in lists)
    m = {"ns_per_op": ns / done, "ms": ns / 1e6 * n / done, "snapshot_bytes": len(snap),
         "memory_bytes": held // CHURN_REPLICAS, "replicas_rss_bytes": held,
         "live_items": len(lists[0]), "exchange_bytes": exchange}
    if hist is not None:
        m["history_bytes"] = len(hist)
    if engine != "yrs":
        m["shallow_snapshot_bytes"] = len(reps[0].shallow())
    how = ("Yrs: one transaction per op, a turn's update = merge_updates of its transactions' updates"
           " (observe), apply_update by the 2 others; snapshot = get_update() (full state)" if engine == "yrs" else
           "Loro: one commit per turn, update = export(Updates(vv before the turn)), import_ by the 2 others;"
           " snapshot = export(Snapshot), history = export(Updates(empty vv)),"
           " shallow_snapshot = export(ShallowSnapshot(oplog_frontiers))")
    note = (f"3 replicas (ids 1, 2, 3), turns of {CHURN_TURN} ops (turn t by replica t % 3), single timed run; {how};"
            f" memory_bytes = RSS delta (before building the replicas -> after the run, all 3 alive) / 3, a proxy;"
            f" converged={converged}, equals model={lists[0] == model}")
    ok = converged and lists[0] == model and done == n
    if done < n:
        note += over_budget(m, done, n)
    return m, done, ok, note


BIGLIST_SIZES = (5_000, 20_000, 80_000, 320_000)


def w15_biglist(engine, n):
    """W15.biglist.N beside ListSync's: one list of N items ("item i"), built by replica 1
    (untimed); timed, a fresh replica loads it whole: from its history (what ListSync's
    DaemonClient.open and first fetch receive, operation by operation) and, for Loro, from its
    snapshot. In process, no network: ListSync's rows are over a real TCP connection."""
    eng = make_engine(engine, 1)
    eng.build([f"item {i}" for i in range(n)])
    hist = eng.export_history()
    snap = eng.export_snapshot()
    m = {"history_bytes": len(hist)}
    loads = [("load_history_ms", hist)]
    if engine != "yrs":
        m["snapshot_bytes"] = len(snap)
        loads.append(("load_snapshot_ms", snap))
    ok, runs = True, 0
    for name, data in loads:
        ms, count, runs = best_ms(LOADS, lambda data=data: load_timed(eng, data))
        m[name] = ms
        ok = ok and count == n
    how = ("Yrs: apply_update(get_update()) into a fresh Doc (Yrs has no separate snapshot)" if engine == "yrs" else
           "Loro: import_(export(Updates(empty vv))) and import_(export(Snapshot())) into a fresh LoroDoc")
    note = (f"one list of {n} items built by replica 1 (untimed); {how}, then its length read;"
            f" {rep_note(LOADS, runs, 'loads')}")
    return m, n, ok, note


RANDOM_SIZES = (1_000, 10_000, 100_000, 1_000_000)
WORKLOADS = (["W1.trace"] + [f"W1.random.{n}" for n in RANDOM_SIZES] +
             ["W2.history", "W3.stream.1", "W3.stream.100", "W4.moves", "W4.merge",
              "W5.sections", "W6.memory"] +
             [f"W7.{o}.{n}" for o in ("reverse", "shuffled") for n in OOO_SIZES] + ["W8.concurrent"] +
             [f"W12.churn.{n}" for n in CHURN_SIZES] + ["W14.kanban", "W16.text", "W17.notes"] +
             [f"W15.biglist.{n}" for n in BIGLIST_SIZES])


def run(engine, workload, args):
    if workload == "W1.trace":
        return w1_trace(engine, args)
    if workload.startswith("W1.random."):
        return w1_random(engine, int(workload.split(".")[2]))
    if workload == "W2.history":
        return w2_history(engine, args)
    if workload.startswith("W3.stream."):
        return w3_stream(engine, args, int(workload.split(".")[2]))
    if workload == "W4.moves":
        return w4_moves(engine)
    if workload == "W4.merge":
        return w4_merge(engine)
    if workload == "W5.sections":
        return w5_sections(engine)
    if workload == "W6.memory":
        return w6_memory(engine, args)
    if workload in WORKLOADS and workload.startswith("W7."):
        return w7_out_of_order(engine, workload.split(".")[1], int(workload.split(".")[2]))
    if workload == "W8.concurrent":
        return w8_concurrent(engine, args)
    if workload in WORKLOADS and workload.startswith("W12.churn."):
        return w12_churn(engine, int(workload.split(".")[2]))
    if workload in WORKLOADS and workload.startswith("W15.biglist."):
        return w15_biglist(engine, int(workload.split(".")[2]))
    if workload == "W14.kanban":
        import kanban  # kanban.py, next to this file
        return kanban.w14_kanban(engine, args, sys.modules[__name__])
    if workload == "W17.notes":
        import notes  # notes.py, next to this file
        return notes.w17_notes(engine, args, sys.modules[__name__])
    if workload == "W16.text":
        import notes
        return notes.w16_text(engine, args, sys.modules[__name__])
    raise SystemExit(f"unknown workload {workload}")


def main():
    global BUDGET_S, REPS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", required=True, choices=["loro-list", "loro-movable", "yrs"])
    ap.add_argument("--workload")
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--concurrent-trace", help="the concurrent trace W8.concurrent replays (PATH.jsonl, with"
                    " PATH.final.txt checked when present; one replica per agent) instead of clownschool")
    ap.add_argument("--scatter", type=int, default=None, metavar="SEED",
                    help="W8.concurrent on Loro: deliver the transactions a replica lacks in a shuffled order"
                         " (seeded), the final merge in 64 rounds with the replicas interleaved (as"
                         " listsync-bench's W8.scattered.AGENTS.OPS)")
    ap.add_argument("--deliver", choices=["authors", "transactions"], default=None,
                    help="W8.concurrent on Loro: listsync-bench's delivery order, ported draw for draw:"
                         " authors = W8.late.AGENTS.OPS, transactions = W8.scattered.AGENTS.OPS")
    ap.add_argument("--seed", type=int, default=47, help="--deliver's SplitMix64 seed (listsync-bench: 47)")
    ap.add_argument("--kanban-script", default=os.path.join(HERE, "..", "results", "W14.kanban.json"),
                    help="W14.kanban's operation script (written by kanban_script.py when missing)")
    ap.add_argument("--list", action="store_true", help="print the supported workload names")
    ap.add_argument("--budget", type=float, default=BUDGET_S,
                    help="seconds one timed loop may take before it is stopped (default %(default)s)")
    ap.add_argument("--reps", type=int, default=REPS,
                    help="cap every repetition at N runs (default %(default)s; 1 = single runs): timed parts"
                         " are the best of up to 10 (W1), 5 (W2 exports and loads, W4.moves load_ms) or 3"
                         " (W4.moves, W4.merge) runs, no new run after 10 s")
    args = ap.parse_args()
    REPS = max(1, args.reps)
    BUDGET_S = args.budget
    if args.list:
        print("\n".join(WORKLOADS))
        return
    if not args.workload:
        ap.error("--workload or --list is required")
    try:
        metrics, ops, ok, note = run(args.engine, args.workload, args)
    except Exception as e:  # report the failure as a result row instead of crashing
        metrics, ops, ok, note = {}, 0, False, f"error: {type(e).__name__}: {e}"
    if args.workload != "W6.memory":
        metrics.setdefault("peak_rss_bytes", rss_peak() - BASE_RSS)
    versions = f"loro {_ver('loro')}, pycrdt {_ver('pycrdt')}"
    print(json.dumps({"engine": args.engine, "workload": args.workload, "metrics": metrics,
                      "ops": ops, "ok": ok, "note": note + (f" [{versions}]" if versions else "")}))


if __name__ == "__main__":
    main()
