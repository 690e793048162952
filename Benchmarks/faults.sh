#!/usr/bin/env bash
# Seeded partition runs of three daemons through fault proxies (issue 19; Docs/Reliability.md,
# "Fault proxy").
#
#   bash Benchmarks/faults.sh [RUNS] [FIRST_SEED]        (defaults: 50 runs, seed 1)
#
# Each run is `listsync-faultproxy scenario --seed S` with the release build, in a process of its
# own, bounded by `timeout` (a run that hangs counts as not converged): A, B, C peered in a
# triangle, every link through a fault proxy (delays, stalls, drops, cuts at random bytes); A
# partitioned from C, B killed or partitioned; all edit; heal; the time until all three hold the
# same list with every acknowledged insert once. 127.0.0.1 only.
# Prints one line per run (seed, faults injected, time to converge after the heal), then the
# summary: runs converged / runs, p50 / p99 / max of the time to converge.
set -uo pipefail

RUNS="${1:-50}"
FIRST="${2:-1}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
swift build -c release --product listsync >/dev/null && swift build -c release --product listsync-faultproxy >/dev/null || exit 1
BIN="$ROOT/.build/release"

TIMES="$(mktemp)"
trap 'rm -f "$TIMES"' EXIT
converged=0
start=$(date +%s)
for ((k = 0; k < RUNS; k++)); do
  seed=$((FIRST + k))
  line="$(timeout 120 "$BIN/listsync-faultproxy" scenario --seed "$seed" --binary "$BIN/listsync" --timeout 30 | head -1)"
  status=$?
  [ -n "$line" ] || line="seed $seed: no result (status $status; timed out?)"
  echo "$line"
  if [[ "$line" == *"missing, each once: yes; converged: yes in "* && "$line" == *" 0 missing"* ]]; then
    converged=$((converged + 1))
    echo "$line" | sed -E 's/.*converged: yes in ([0-9]+) ms.*/\1/' >> "$TIMES"
  fi
done
elapsed=$(( $(date +%s) - start ))
sort -n "$TIMES" | awk -v runs="$RUNS" -v ok="$converged" -v secs="$elapsed" '
  { t[NR] = $1 }
  END {
    n = NR
    p50 = n ? t[int((n * 50 + 99) / 100)] : 0
    p99 = n ? t[int((n * 99 + 99) / 100)] : 0
    max = n ? t[n] : 0
    printf "summary: %d/%d runs converged; time to converge after the heal: p50 %d ms, p99 %d ms, max %d ms (%d s in all)\n", ok, runs, p50, p99, max, secs
  }'
[ "$converged" -eq "$RUNS" ]
