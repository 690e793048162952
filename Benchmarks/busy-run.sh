#!/usr/bin/env bash
# Compaction while the list is busy (issue 48, item 2): peered daemons, clients editing one
# document without a pause (listsync-load: inserts, moves and deletes, every edit acknowledged),
# and every INTERVAL seconds each daemon's figures from `listsync status --json`: compactions,
# operations collected, the document's operations and bytes, its reclaimable bytes, the data
# folder's bytes on disk and the daemon's RSS. A daemon that compacts only at a quiescent point
# shows its history growing for as long as the clients type; one that compacts a stable prefix
# keeps it flat.
#
#   bash Benchmarks/busy-run.sh [--daemons N] [--clients N] [--seconds S] [--interval S] [--bin DIR] [-- SERVE-FLAGS...]
#
# Defaults: 3 daemons (the second and third peer with the first), 8 clients, 600 s, a sample
# every 10 s, binaries from .build/release (`swift build -c release --product listsync --product
# listsync-load`), the daemons' compaction flags at their defaults (anything after `--` is passed
# to every `listsync serve`). Prints one line per daemon per sample, and one more after the clients stop.
# Listens on 127.0.0.1 only; stops everything it started.
set -euo pipefail
DAEMONS=3 CLIENTS=8 SECONDS_=600 INTERVAL=10 BIN=.build/release
SERVE_FLAGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --daemons) DAEMONS=$2; shift 2 ;;
        --clients) CLIENTS=$2; shift 2 ;;
        --seconds) SECONDS_=$2; shift 2 ;;
        --interval) INTERVAL=$2; shift 2 ;;
        --bin) BIN=$2; shift 2 ;;
        --) shift; SERVE_FLAGS=("$@"); break ;;
        -h|--help) sed -n 2,17p "$0"; exit 0 ;;
        *) echo "busy-run.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
for b in listsync listsync-load; do
    [ -x "$BIN/$b" ] || { echo "busy-run.sh: $BIN/$b is missing: swift build -c release --product listsync --product listsync-load" >&2; exit 2; }
done
D=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$D"; }
trap cleanup EXIT
BASE=$((20000 + RANDOM % 10000))
ADDRS=()
for ((k = 0; k < DAEMONS; k++)); do
    port=$((BASE + k))
    ADDRS+=("127.0.0.1:$port")
    extra=()
    if [ "$k" -gt 0 ]; then extra=(--key-file "$D/d0/key" --peer "127.0.0.1:$BASE"); fi
    "$BIN/listsync" serve --data "$D/d$k" --listen "127.0.0.1:$port" "${extra[@]}" "${SERVE_FLAGS[@]}" > "$D/d$k.log" 2>&1 &
    PIDS+=($!)
    sleep 1
done
LOADARGS=()
for a in "${ADDRS[@]}"; do LOADARGS+=(--daemon "$a"); done
"$BIN/listsync-load" "${LOADARGS[@]}" --key-file "$D/d0/key" --clients "$CLIENTS" --edits 100000000 --docs 1 \
    --moves 40 --deletes 40 --json > "$D/load.json" 2> "$D/load.err" &
LOAD=$!
PIDS+=($LOAD)
echo "t_s daemon compactions ops_collected doc_operations doc_bytes reclaimable_bytes bytes_on_disk rss_bytes"
start=$(date +%s)
sample() {
    local t=$(( $(date +%s) - start ))
    for ((k = 0; k < DAEMONS; k++)); do
        "$BIN/listsync" status --json --daemon "${ADDRS[$k]}" --key-file "$D/d0/key" 2>/dev/null | python3 -c '
import json, sys
t, k = sys.argv[1], sys.argv[2]
try:
    s = json.load(sys.stdin)
except ValueError:
    print(t, "d" + k, "no answer"); sys.exit(0)
docs = s.get("resident", [])
d = max(docs, key=lambda x: x.get("operations", 0)) if docs else {}
print(t, "d" + k, s.get("compactions"), s.get("operations_collected"), d.get("operations", 0), d.get("document_bytes", 0),
      d.get("reclaimable_bytes", 0), s.get("bytes_on_disk"), s.get("rss_bytes"))
' "$t" "$k"
    done
}
while [ $(( $(date +%s) - start )) -lt "$SECONDS_" ]; do
    sleep "$INTERVAL"
    kill -0 "$LOAD" 2>/dev/null || { echo "busy-run.sh: the load stopped early:" >&2; cat "$D/load.err" >&2; break; }
    sample
done
kill "$LOAD" 2>/dev/null || true
echo "# the clients stopped; ${INTERVAL} s later:"
sleep "$INTERVAL"
sample
