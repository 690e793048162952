#!/usr/bin/env bash
# Side-by-side benchmark: ListSync vs Loro vs Yrs (issue 5).  Spec: WORKLOADS.md.
#
#   bash Benchmarks/compare.sh [--quick] [--skip-swift] [--budget SECONDS] [--only W,W...]
#
#   --quick       smoke test: skip W1.random.1000000 and W12.churn.1000000, 20 s budget per timed loop
#   --only LIST   only these workloads (comma-separated, e.g. W2.history), every engine; results in
#                 results/only.jsonl and the table (latest.* are left as they are)
#   --skip-swift  run only the Python engines (Loro, Yrs)
#   --budget S    wall-clock cap for one timed loop of a Python engine (default 120;
#                 Yrs slows down as documents fragment; a stopped run reports lower bounds)
#   TRACE=PATH    the automerge-paper trace (default: Benchmarks/Traces/automerge-paper.jsonl)
#
# Writes Benchmarks/results/latest.jsonl (one JSON object per engine x workload),
# latest.md (Markdown table + machine description) and cost-per-op.svg, and
# prints the comparison table.  Every workload runs in its own process.
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"
QUICK=0 SKIP_SWIFT=0 BUDGET="" ONLY="" ARGS="$*"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --skip-swift) SKIP_SWIFT=1 ;;
    --budget) BUDGET="$2"; shift ;;
    --only) ONLY="$2"; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$BUDGET" ] || { [ "$QUICK" = 1 ] && BUDGET=20 || BUDGET=120; }

TRACE="${TRACE:-$BENCH/Traces/automerge-paper.jsonl}"
[ -f "$TRACE" ] || { echo "compare.sh: trace not found (set TRACE=...)" >&2; exit 1; }
TRACE="$(cd "$(dirname "$TRACE")" && pwd)/$(basename "$TRACE")"

VENV="$BENCH/.venv"
PY="$VENV/bin/python"
RESULTS="$BENCH/results"
OUT="$RESULTS/latest.jsonl"
PEERS="$BENCH/compare/peers.py"
# Pinned so runs are comparable over time; bump deliberately.
PIP_PACKAGES="loro==1.17.1 pycrdt==0.14.13"

log() { echo "[compare] $*" >&2; }

# (a) Python environment with the peer engines
. "$BENCH/venv.sh"
# shellcheck disable=SC2086
ensure_venv "import loro, pycrdt" $PIP_PACKAGES

WORKLOADS=$("$PY" "$PEERS" --engine loro-list --list)
if [ "$QUICK" = 1 ]; then
  WORKLOADS=$(echo "$WORKLOADS" | grep -v -e '^W1\.random\.1000000$' -e '^W12\.churn\.1000000$')
fi
if [ -n "$ONLY" ]; then
  for w in ${ONLY//,/ }; do
    [ "$w" = W10.store ] || echo "$WORKLOADS" | grep -qx "$w" || { echo "compare.sh: unknown workload $w" >&2; exit 2; }
  done
  WORKLOADS=$(echo "$WORKLOADS" | grep -x -F "$(echo "${ONLY//,/$'\n'}")" || true)
  OUT="$RESULTS/only.jsonl"
fi

mkdir -p "$RESULTS"
# W14.kanban: every engine replays the one operation script, written here once (issue 43).
KANBAN="$RESULTS/W14.kanban.json"
if echo "$WORKLOADS" | grep -qx W14.kanban; then
  log "$(python3 "$BENCH/compare/kanban_script.py" "$KANBAN")"
fi
# Two runs at once would interleave their results (and their timings): refuse.
exec 9>"$RESULTS/.lock"
flock -n 9 || { echo "compare.sh: another run is using $RESULTS" >&2; exit 1; }
: > "$OUT"

# Append one result line; a crashed run becomes an ok=false record.
record() {  # engine workload command...
  local engine="$1" workload="$2"; shift 2
  local line rc=0
  line=$("$@" 2>"$RESULTS/.stderr") || rc=$?
  line=$(printf '%s\n' "$line" | grep '^{' | tail -n 1 || true)
  if [ "$rc" != 0 ] || [ -z "$line" ]; then
    local err; err=$(tail -c 300 "$RESULTS/.stderr" | tr '\n"\\\t' "  / ")
    [ "$rc" != 0 ] || err="no JSON object on stdout. $err"
    line="{\"engine\": \"$engine\", \"workload\": \"$workload\", \"metrics\": {}, \"ops\": 0, \"ok\": false, \"note\": \"run failed (exit $rc): $err\"}"
  fi
  printf '%s\n' "$line" >> "$OUT"
}

# (b) ListSync (Swift)
if [ "$SKIP_SWIFT" = 0 ]; then
  log "swift build -c release --product listsync-bench"
  (cd "$ROOT" && swift build -c release --product listsync-bench)
  BIN="$ROOT/.build/release/listsync-bench"
fi

# (c) Every workload on every engine, one workload at a time: the engines of one row run minutes
# apart at most, so a slow phase of the machine (this VM has phases of tens of minutes, up to
# 1.5x apart) weighs on all of them rather than on one engine's whole block.
for w in $WORKLOADS; do
  if [ "$SKIP_SWIFT" = 0 ]; then
    log "listsync $w"
    record listsync "$w" "$BIN" --workload "$w" --json --trace "$TRACE" --kanban-script "$KANBAN"
  fi
  # Loro and Yrs through their Python bindings
  for e in loro-list loro-movable yrs; do
    case "$e $w" in "loro-movable W7."*) continue ;; esac  # W7 (inserts only): Loro list and Yrs
    case "$e $w" in "loro-movable W8."*) continue ;; esac  # W8: Loro list and Yrs (movable: minutes)
    case "$e $w" in "loro-list W14."*) continue ;; esac    # W14: LoroMovableList (per section) and Yrs
    case "$e $w" in "loro-list W16."*|"loro-list W17."*) continue ;; esac  # W16, W17: LoroMovableList and Yrs
    log "$e $w"
    record "$e" "$w" "$PY" "$PEERS" --engine "$e" --workload "$w" --trace "$TRACE" --budget "$BUDGET" \
      --kanban-script "$KANBAN"
  done
done
# W10.store: the durable store against SQLite (WAL, synchronous=FULL, one INSERT per transaction) on
# the same disk (issue 17); Loro and Yrs have no durable store to compare.
if [ -z "$ONLY" ] || [[ ",$ONLY," == *",W10.store,"* ]]; then
  if [ "$SKIP_SWIFT" = 0 ]; then
    log "listsync W10.store"
    record listsync W10.store "$BIN" --workload W10.store --json --trace "$TRACE"
  fi
  log "sqlite-wal W10.store"
  record sqlite-wal W10.store "$PY" "$BENCH/compare/sqlite_wal.py"
fi
rm -f "$RESULTS/.stderr"
if [ -n "$ONLY" ]; then
  "$PY" "$BENCH/compare/table.py" "$OUT" | grep -v ' NO DATA '   # the targets of other workloads
  log "wrote $OUT"
  exit 0
fi

# (d) table, Markdown report with the machine description, chart
"$PY" "$BENCH/compare/table.py" "$OUT"
{
  echo "# ListSync vs Loro vs Yrs: latest results"
  echo
  echo "Generated by \`bash Benchmarks/compare.sh${ARGS:+ $ARGS}\`" \
       "on $(date -u '+%Y-%m-%d %H:%M UTC'); workloads: [WORKLOADS.md](../WORKLOADS.md);" \
       "raw results: latest.jsonl; chart: ![cost per op](cost-per-op.svg)"
  echo
  "$PY" "$BENCH/compare/table.py" --markdown "$OUT"
  echo
  echo "## Machine"
  echo
  echo '```'
  echo "cores (nproc): $(nproc)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "kernel: $(uname -r)"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  free -g
  echo "swift: $(swift --version 2>&1 | head -n 1 || echo 'not found')"
  echo "python: $("$PY" --version 2>&1)"
  "$PY" -m pip list --disable-pip-version-check 2>/dev/null | grep -Ei '^(loro|pycrdt) ' || true
  echo "time budget per timed loop (Python engines): ${BUDGET} s"
  echo '```'
} > "$RESULTS/latest.md"
(cd "$BENCH/compare" && "$PY" chart.py "$OUT" "$RESULTS/cost-per-op.svg")
log "wrote $OUT, $RESULTS/latest.md, $RESULTS/cost-per-op.svg"
