#!/usr/bin/env python3
"""Converts an editing history exported as Eg-walker JSON into this repository's concurrent trace
format (Benchmarks/Traces/README.md), so that `listsync-bench --workload W8.concurrent
--concurrent-trace OUT.jsonl` and `peers.py --concurrent-trace OUT.jsonl` replay it.

The export is one JSON object: `endContent` (the final text), `numAgents`, and `txns`, a list of
transactions `{"agent": A, "parents": [index, ...], "patches": [[pos, delCount, "text"], ...]}`
whose parents are indexes of earlier transactions (a transaction made on the document as it was
after merging exactly those). That is the meaning of a line of the concurrent format, so each
transaction becomes the line `[agent, [parents], [[pos, delCount, "text"], ...]]`, in order, and
`endContent` becomes OUT.final.txt (without `.jsonl`).

    python3 Benchmarks/compare/egwalker_trace.py IN.json OUT.jsonl [--prefix N]

`--prefix N` keeps the first N transactions only (every parent comes before its child, so any
prefix is a whole history), with no final text (the replay then checks the replicas against one
another). Refuses a transaction that names a parent not before it, or a patch that is not
`[int >= 0, int >= 0, str]`, and says which.
"""
import json
import sys


def convert(source, out_path, prefix=None):
    with open(source, encoding="utf-8") as f:
        data = json.load(f)
    txns = data["txns"] if prefix is None else data["txns"][:prefix]
    agents = set()
    edits = 0
    with open(out_path, "w", encoding="utf-8") as out:
        for i, t in enumerate(txns):
            parents = t["parents"]
            if any(not isinstance(p, int) or p < 0 or p >= i for p in parents):
                raise SystemExit(f"transaction {i}: parents {parents} are not all earlier transactions")
            for p in t["patches"]:
                if not (len(p) == 3 and isinstance(p[0], int) and isinstance(p[1], int) and isinstance(p[2], str)
                        and p[0] >= 0 and p[1] >= 0):
                    raise SystemExit(f"transaction {i}: patch {p!r} is not [pos, delCount, text]")
                edits += p[1] + len(p[2])
            agents.add(t["agent"])
            out.write(json.dumps([t["agent"], parents, t["patches"]], separators=(",", ":")) + "\n")
    if prefix is None:
        final = out_path[:-len(".jsonl")] if out_path.endswith(".jsonl") else out_path
        with open(final + ".final.txt", "w", encoding="utf-8") as f:
            f.write(data["endContent"])
    print(f"{len(txns)} transactions by {len(agents)} agents, {edits} element edits"
          + ("" if prefix is not None else f", final length {len(data['endContent'])}"))


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) not in (2, 4) or args[0] in ("-h", "--help") or (len(args) == 4 and args[2] != "--prefix"):
        print(__doc__)
        raise SystemExit(0 if args[:1] in (["-h"], ["--help"]) else 2)
    convert(args[0], args[1], int(args[3]) if len(args) == 4 else None)
