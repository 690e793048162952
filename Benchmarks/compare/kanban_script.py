#!/usr/bin/env python3
"""W14.kanban's operation script (Benchmarks/WORKLOADS.md), written once so that every engine
replays exactly the same work.

    python3 Benchmarks/compare/kanban_script.py PATH.json

No third-party imports: compare.sh runs it before the engines, and listsync-bench and peers.py
both read PATH.json. The script is a pure function of the constants below (SplitMix64, seed 14).

Layout: 10,000 cards in 8 sections, card k in section k % 8 (in order of k), six fields each:
title (string), notes (string), done (bool), votes (counter), tags (set of strings), due (date,
milliseconds since 1970). Then three replicas edit their own copy concurrently, 3,000 operations
each, generated against a model of that replica's own list (positions are that replica's), and
nobody receives anything before the final merge.

Operations (JSON arrays; `card` is the card number, for checks only):
  ["m", fs, fr, ts, tr, card]     move: remove at row fr of section fs, insert at row tr of ts
  ["s", s, r, card, name, value]  set a value field (title, notes: string; done: bool; due: int ms)
  ["c", s, r, card, amount]       votes += amount
  ["a", s, r, card, tag]          add tag to tags
  ["r", s, r, card, tag]          remove tag from tags
  ["d", s, r, card]               delete the card
"""
import json
import sys

from splitmix import SplitMix64

SEED, SECTIONS, CARDS, REPLICAS, OPS_PER_REPLICA = 14, 8, 10_000, 3, 3_000
TAGS = ["bug", "feature", "ui", "backend", "urgent", "later", "docs", "test"]
DUE_BASE = 1_790_000_000_000  # milliseconds since 1970 (2026)


def make_script(seed=SEED, sections=SECTIONS, cards=CARDS, replicas=REPLICAS, ops=OPS_PER_REPLICA):
    rng = SplitMix64(seed)
    initial = []
    for k in range(cards):
        tags = sorted({TAGS[rng.below(len(TAGS))] for _ in range(1 + rng.below(2))})
        initial.append({"card": k, "section": k % sections, "title": f"Card {k}",
                        "notes": f"notes for card {k}", "done": False, "votes": 1 + rng.below(5),
                        "tags": tags, "due": DUE_BASE + 3_600_000 * rng.below(24 * 90)})
    scripts = []
    for rep in range(replicas):
        layout = [[c["card"] for c in initial if c["section"] == s] for s in range(sections)]
        tags = {c["card"]: set(c["tags"]) for c in initial}
        out = []
        n_edit = 0
        while len(out) < ops:
            s = rng.below(sections)
            if not layout[s]:
                continue
            r = rng.below(len(layout[s]))
            card = layout[s][r]
            p = rng.below(100)
            n_edit += 1
            if p < 15:  # move within the section
                tr = rng.below(len(layout[s]))
                layout[s].insert(tr, layout[s].pop(r))
                out.append(["m", s, r, s, tr, card])
            elif p < 25:  # move to another section
                ts = (s + 1 + rng.below(sections - 1)) % sections
                tr = rng.below(len(layout[ts]) + 1)
                layout[s].pop(r)
                layout[ts].insert(tr, card)
                out.append(["m", s, r, ts, tr, card])
            elif p < 60:  # a value field
                q = rng.below(4)
                if q == 0:
                    out.append(["s", s, r, card, "title", f"Card {card} (r{rep + 1} edit {n_edit})"])
                elif q == 1:
                    out.append(["s", s, r, card, "notes", f"replica {rep + 1} wrote edit {n_edit} of card {card}"])
                elif q == 2:
                    out.append(["s", s, r, card, "done", rng.below(2) == 1])
                else:
                    out.append(["s", s, r, card, "due", DUE_BASE + 3_600_000 * rng.below(24 * 90)])
            elif p < 75:  # counter
                out.append(["c", s, r, card, 1 + rng.below(3)])
            elif p < 93:  # set changes
                have = sorted(tags[card])
                if have and rng.below(2) == 0:
                    t = have[rng.below(len(have))]
                    tags[card].discard(t)
                    out.append(["r", s, r, card, t])
                else:
                    t = TAGS[rng.below(len(TAGS))]
                    tags[card].add(t)
                    out.append(["a", s, r, card, t])
            else:  # delete
                layout[s].pop(r)
                out.append(["d", s, r, card])
        scripts.append(out)
    return {"workload": "W14.kanban", "seed": seed, "sections": sections, "cards": cards,
            "tags": TAGS, "initial": initial, "replicas": scripts}


def card_check(script, cards_seen, votes_seen=None):
    """Compare the merged cards (a list of card numbers, all sections) with the script:
    (metrics, every card exactly once).

    A card one replica deletes while another moves it may stay: in ListSync a move concurrent with
    a delete keeps the item where it went (Docs/Semantics.md), and the copy Loro and Yrs make for a
    move stays too. Such cards are `kept_moved_deleted`; `resurrected_cards` are deleted cards
    back for no such reason. Once = no duplicate, nothing lost, nothing resurrected.
    `votes_expected`: each card shown (once) with its board votes plus every increment of it."""
    deleted_by, moved_by = {}, {}
    votes = {c["card"]: c["votes"] for c in script["initial"]}
    for rep, ops in enumerate(script["replicas"]):
        for op in ops:
            if op[0] == "d":
                deleted_by.setdefault(op[3], set()).add(rep)
            elif op[0] == "m":
                moved_by.setdefault(op[5], set()).add(rep)
            elif op[0] == "c":
                votes[op[3]] += op[4]
    live = {c["card"] for c in script["initial"]} - set(deleted_by)
    counts = {}
    for k in cards_seen:
        counts[k] = counts.get(k, 0) + 1
    dup = sum(c - 1 for c in counts.values() if c > 1)
    lost = sum(1 for k in live if k not in counts)
    back = [k for k in counts if k not in live]
    kept = sum(1 for k in back if moved_by.get(k, set()) - deleted_by[k])
    m = {"cards_expected": len(live), "cards_after_merge": len(cards_seen), "duplicate_cards": dup,
         "lost_cards": lost, "kept_moved_deleted": kept, "resurrected_cards": len(back) - kept}
    once = dup == 0 and lost == 0 and len(back) == kept
    m["every_card_once"] = 1 if once else 0
    if votes_seen is not None:
        m["votes_expected"] = sum(votes[k] for k in counts)
        m["votes_after_merge"] = votes_seen
    return m, once


def ensure_script(path):
    """Reads PATH, writing it first when it is missing or stale."""
    try:
        with open(path) as f:
            s = json.load(f)
        if s.get("seed") == SEED and len(s.get("initial", [])) == CARDS:
            return s
    except (OSError, ValueError):
        pass
    s = make_script()
    with open(path, "w") as f:
        json.dump(s, f, separators=(",", ":"))
    return s


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    s = make_script()
    with open(sys.argv[1], "w") as f:
        json.dump(s, f, separators=(",", ":"))
    ops = [op[0] for r in s["replicas"] for op in r]
    print(f"{sys.argv[1]}: {s['cards']} cards, {len(ops)} operations "
          + ", ".join(f"{k}={ops.count(k)}" for k in "mscard"))
