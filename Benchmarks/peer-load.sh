#!/usr/bin/env bash
# Two peered daemons under listsync-load (clients take the daemons in turn), with compaction on:
# the daemons' CPU seconds and the load's acknowledged ops/s, for before/after comparisons of the
# document core on peered documents (Docs/Semantics.md §7, "Peers").
#
#   bash Benchmarks/peer-load.sh [BIN_DIR] [LABEL]
#
# BIN_DIR holds the `listsync` to run (default .build/release; build it with
# `swift build -c release --product listsync --product listsync-load`); listsync-load is taken
# from .build/release. Prints one line: LABEL, each daemon's CPU seconds, ops/s, convergence.
set -euo pipefail
BIN=${1:-.build/release}
LABEL=${2:-run}
LOAD=.build/release/listsync-load
D=$(mktemp -d)
trap 'kill "${A:-}" "${B:-}" 2>/dev/null || true; rm -rf "$D"' EXIT
PA=$((20000 + RANDOM % 10000)); PB=$((PA + 1))
FLAGS=(--compact-after 100 --compact-interval 0)
"$BIN/listsync" serve --data "$D/a" --listen 127.0.0.1:$PA "${FLAGS[@]}" > "$D/a.log" 2>&1 & A=$!
sleep 1
"$BIN/listsync" serve --data "$D/b" --listen 127.0.0.1:$PB --key-file "$D/a/key" --peer 127.0.0.1:$PA "${FLAGS[@]}" > "$D/b.log" 2>&1 & B=$!
sleep 1.5
OUT=$("$LOAD" --daemon 127.0.0.1:$PA --daemon 127.0.0.1:$PB --key-file "$D/a/key" --clients 32 --edits 500 --docs 4 --json | tail -1)
sleep 3
cpu() { awk '{print ($14+$15)/100}' "/proc/$1/stat"; }
echo "$LABEL cpu_a=$(cpu $A) cpu_b=$(cpu $B) $(echo "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("ops_per_s=%.0f converged=%s" % (d["acknowledged_ops_per_s"], d["converged"]))')"
