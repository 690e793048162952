#!/usr/bin/env bash
# Side by side under load (issue 19): ListSync's daemon vs pycrdt-websocket (SQLiteYStore).
#
#   bash Benchmarks/load.sh [--no-build] [CLIENTS] [EDITS]      (defaults: 16 clients, 200 edits)
#
# The same workload on both, one after the other in this run: CLIENTS clients each make EDITS
# inserts into one shared list, each insert acknowledged before the next, until every client
# holds the same list with every item once. Then the server is killed with SIGKILL, restarted on
# its data, and a fresh client counts the acknowledged edits that are missing.
#   ListSync:          .build/release/listsync-load --docs 1 --moves 0 --deletes 0 --kill-after
#                      (acknowledged: the daemon's acknowledgement, after fdatasync)
#   pycrdt-websocket:  Benchmarks/compare/ysync_load.py, in Benchmarks/.venv
#                      (acknowledged: another client received the edit; y-websocket has no ack)
#   --no-build         use the release binaries as they are (no swift build)
#
# Prints a side-by-side table and writes it to Benchmarks/results/load-side-by-side.md
# (the two JSON result lines to load-side-by-side.jsonl).
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"
BUILD=1 POS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) BUILD=0 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "load.sh: unknown option $1" >&2; exit 2 ;;
    *) POS+=("$1") ;;
  esac
  shift
done
CLIENTS="${POS[0]:-16}" EDITS="${POS[1]:-200}"

VENV="$BENCH/.venv"
PY="$VENV/bin/python"
RESULTS="$BENCH/results"
OUT_MD="$RESULTS/load-side-by-side.md"
OUT_JSON="$RESULTS/load-side-by-side.jsonl"
# Pinned so runs are comparable over time; bump deliberately. (pycrdt as in compare.sh.)
PIP_PACKAGES="pycrdt==0.14.13 pycrdt-websocket==0.16.5 pycrdt-store==0.1.5 sqlite-anyio==0.2.10
  anyio==4.16.0 uvicorn==0.54.0 h11==0.16.0 click==8.5.1 websockets==17.4"

log() { echo "[load] $*" >&2; }

# (a) Python environment with the peer server and its client library
. "$BENCH/venv.sh"
# shellcheck disable=SC2086
ensure_venv "import pycrdt.websocket, pycrdt.store, uvicorn, websockets" $PIP_PACKAGES

# (b) ListSync's daemon and load tool (one product per swift build call)
if [ "$BUILD" = 1 ]; then
  for product in listsync listsync-load; do
    log "swift build -c release --product $product"
    (cd "$ROOT" && nice -n 10 swift build -c release --product "$product" >&2)
  done
fi
BIN="$ROOT/.build/release"

mkdir -p "$RESULTS"
exec 9>"$RESULTS/.load-lock"
flock -n 9 || { echo "load.sh: another run is using $RESULTS" >&2; exit 1; }

# (c) The two runs. A failed run still leaves a JSON line (ok false, or a note).
log "ListSync: $CLIENTS clients x $EDITS inserts"
LS=$("$BIN/listsync-load" --clients "$CLIENTS" --edits "$EDITS" --docs 1 --moves 0 --deletes 0 \
       --kill-after --json 2>"$RESULTS/.load-stderr" | grep '^{' | tail -n 1 || true)
[ -n "$LS" ] || LS="{\"note\": \"listsync-load failed: $(tail -c 300 "$RESULTS/.load-stderr" | tr '\n"\\' '  /')\"}"
log "pycrdt-websocket: $CLIENTS clients x $EDITS inserts"
YS=$("$PY" "$BENCH/compare/ysync_load.py" --clients "$CLIENTS" --edits "$EDITS" --timeout 60 \
       --run-timeout 900 | grep '^{' | tail -n 1 || true)
[ -n "$YS" ] || YS='{"note": "ysync_load.py printed no result"}'
printf '%s\n%s\n' "$LS" "$YS" > "$OUT_JSON"

# (d) The table
"$PY" - "$OUT_JSON" "$OUT_MD" "$CLIENTS" "$EDITS" <<'EOF'
import json, os, platform, subprocess, sys, datetime
src, out, clients, edits = sys.argv[1:5]
ls, ys = (json.loads(l) for l in open(src))

def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"

def f(d, k, scale=1.0, digits=1):
    v = d.get(k)
    return "n/a" if v is None else f"{v * scale:,.{digits}f}"

PEER_KEY = {"daemon_cpu_seconds": "server_cpu_seconds"}

def ratio(k):
    a, b = ls.get(k), ys.get(PEER_KEY.get(k, k))
    if not a or not b:
        return "n/a"
    r = a / b
    return f"{r:.2f}× ({'met' if r <= 0.5 else 'MISSED'}: target ≤ 0.5×)"

def lost(d):
    if d.get("missing_acknowledged") is None:
        return "n/a"
    return f"{d['missing_acknowledged']:,} of {d.get('acknowledged_inserts', 0):,}"

mib = 1 / (1024 * 1024)
rows = [
    ("time to converge (s)", f(ls, "converge_seconds", digits=2), f(ys, "converge_seconds", digits=2), ratio("converge_seconds")),
    ("fan-out latency p50 (ms)", f(ls, "fanout_p50_ms"), f(ys, "fanout_p50_ms"), ratio("fanout_p50_ms").split(" ")[0]),
    ("fan-out latency p99 (ms)", f(ls, "fanout_p99_ms"), f(ys, "fanout_p99_ms"), ratio("fanout_p99_ms")),
    ("server CPU, timed phase (s)", f(ls, "daemon_cpu_seconds", digits=2), f(ys, "server_cpu_seconds", digits=2), ratio("daemon_cpu_seconds").split(" ")[0]
     if ys.get("server_cpu_seconds") and ls.get("daemon_cpu_seconds") else "n/a"),
    ("load tool's clients CPU, timed phase (s)", f(ls, "clients_cpu_seconds", digits=2), f(ys, "clients_cpu_seconds", digits=2), ""),
    ("server RSS once converged (MiB)", f(ls, "daemon_rss_bytes", mib), f(ys, "server_rss_bytes", mib), ""),
    ("acknowledged edits lost after kill -9", lost(ls), lost(ys), ""),
    ("converged, every item once", str(ls.get("converged")) + ", " + str(ls.get("items_once")),
     str(ys.get("converged")) + ", " + str(ys.get("items_once")), ""),
]
try:
    versions = subprocess.run([sys.executable, "-m", "pip", "freeze"], capture_output=True, text=True).stdout
    versions = ", ".join(l for l in versions.split() if l.split("==")[0] in ("pycrdt", "pycrdt-websocket", "pycrdt-store", "uvicorn", "websockets"))
except Exception:
    versions = "?"
lines = [
    f"Workload: {clients} clients × {edits} inserts into one shared list, each insert acknowledged "
    "before the client's next; then kill -9 of the server, restart, and a fresh client's check.",
    f"Machine: {os.cpu_count()} cores ({cpu_model()}), {platform.system()} {platform.release()}; "
    f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; load average at the end "
    f"{os.getloadavg()[0]:.1f} (other work shares the machine unless this is near 0). Peer: {versions}.",
    "",
    "| | ListSync daemon | pycrdt-websocket + SQLiteYStore | ListSync / pycrdt |",
    "| --- | ---: | ---: | --- |",
] + [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows] + [
    "",
    "Acknowledged: ListSync, the daemon's acknowledgement (sent after fdatasync); pycrdt-websocket, "
    "which acknowledges nothing, an edit once a client other than its author has received it "
    "(the server relayed it).",
]
for name, d in (("ListSync", ls), ("pycrdt-websocket", ys)):
    if d.get("note") or d.get("first_failure"):
        lines.append(f"{name} note: {d.get('note') or d.get('first_failure')}")
text = "\n".join(lines) + "\n"
open(out, "w").write(text)
print(text)
EOF
log "wrote $OUT_MD"
