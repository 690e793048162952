#!/usr/bin/env bash
# Compaction while the list is busy (issue 48, item 2): peered daemons, clients editing one
# document without a pause (listsync-load: inserts, moves and deletes, every edit acknowledged),
# and every INTERVAL seconds each daemon's figures from `listsync status --json`: compactions,
# operations collected, the document's operations and bytes, its reclaimable bytes, the data
# folder's bytes on disk and the daemon's RSS. A daemon that compacts only at a quiescent point
# shows its history growing for as long as the clients type; one that compacts a stable prefix
# keeps it flat.
#
#   bash Benchmarks/busy-run.sh [--daemons N] [--clients N] [--seconds S] [--interval S] [--rate N] [--bin DIR] [-- SERVE-FLAGS...]
#
# Defaults: 3 daemons (the second and third peer with the first), 8 clients, 600 s, a sample
# every 10 s, each client as fast as its acknowledgements come (--rate N: at most N edits a
# second each), binaries from .build/release (`swift build -c release --product listsync` and
# `--product listsync-load`, one product per command), the daemons' compaction flags at their
# defaults (anything after `--` is passed to every `listsync serve`). Prints one line per daemon per sample, with the clients' progress
# (edits acknowledged, failed by kind); then, once the clients stopped and converged, their result
# (acknowledged and failed edits, converged, each item once) and one more sample.
# Listens on 127.0.0.1 only; stops everything it started.
set -euo pipefail
DAEMONS=3 CLIENTS=8 SECONDS_=600 INTERVAL=10 RATE=0 BIN=.build/release
SERVE_FLAGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --daemons) DAEMONS=$2; shift 2 ;;
        --clients) CLIENTS=$2; shift 2 ;;
        --seconds) SECONDS_=$2; shift 2 ;;
        --interval) INTERVAL=$2; shift 2 ;;
        --rate) RATE=$2; shift 2 ;;
        --bin) BIN=$2; shift 2 ;;
        --) shift; SERVE_FLAGS=("$@"); break ;;
        -h|--help) sed -n 2,19p "$0"; exit 0 ;;
        *) echo "busy-run.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
for b in listsync listsync-load; do
    [ -x "$BIN/$b" ] || { echo "busy-run.sh: $BIN/$b is missing: swift build -c release --product $b" >&2; exit 2; }
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
    --moves 40 --deletes 40 --seconds "$SECONDS_" --progress "$INTERVAL" --rate "$RATE" --json > "$D/load.json" 2> "$D/load.err" &
LOAD=$!
PIDS+=($LOAD)
echo "t_s daemon compactions ops_collected doc_operations doc_bytes reclaimable_bytes bytes_on_disk rss_bytes rate_limited"
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
      d.get("reclaimable_bytes", 0), s.get("bytes_on_disk"), s.get("rss_bytes"), s.get("batches_rate_limited", 0))
' "$t" "$k"
    done
}
while [ $(( $(date +%s) - start )) -lt "$SECONDS_" ]; do
    sleep "$INTERVAL"
    if ! kill -0 "$LOAD" 2>/dev/null; then
        # The clients stop by themselves once SECONDS have passed since they began to edit.
        [ $(( $(date +%s) - start )) -ge "$SECONDS_" ] || { echo "busy-run.sh: the load stopped early:" >&2; cat "$D/load.err" >&2; }
        break
    fi
    sample
    tail -n 1 "$D/load.err" | sed 's/^/# /'
done
# The clients stop by themselves at SECONDS; then they wait (at most 120 s) for every copy to agree.
wait "$LOAD" && rc=0 || rc=$?
python3 -c '
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("# the clients gave no result (exit " + sys.argv[2] + ")"); sys.exit(0)
print("# the clients stopped: %d edits acknowledged, %d failed %s; converged %s, each item once %s (exit %s)" % (
    r["acknowledged_edits"], r["failed_edits"], r.get("failures_by_kind", {}), r["converged"], r["items_once"], sys.argv[2]))
if r.get("first_failure"): print("# first failure: " + r["first_failure"])
' "$D/load.json" "$rc"
tail -n 3 "$D/load.err" | grep -v "^listsync-load: [0-9]* s:" | sed 's/^/# /' || true
echo "# ${INTERVAL} s later:"
sleep "$INTERVAL"
sample
