#!/usr/bin/env bash
# Seeds per second of each `listsync simulate` mode, for one or more builds side by side
# (issue 46: before and after a change, measured in the same moment, interleaved mode by mode).
#
#   Benchmarks/simulate-modes.sh [--runs N] BINARY [BINARY ...]
#
# Each BINARY is a `listsync` (a release build: `swift build -c release --product listsync`).
# For each mode, each binary runs N seeds (default 200, seeds 1 … N) with --quiet; prints one
# line per mode and binary: the mode, the binary, the wall seconds, seeds per second, and whether
# every seed passed. Wall time on a shared machine: compare binaries of one run, not runs.
set -euo pipefail
RUNS=200
if [ "${1:-}" = "--runs" ]; then RUNS="$2"; shift 2; fi
[ $# -ge 1 ] || { sed -n '2,11p' "$0"; exit 2; }
MODES=(
  ""
  "--daemons 3"
  "--crashes 2"
  "--text-edits 30"
  "--compact-after 20"
  "--compact-after 20 --daemons 3 --roam 30"
  "--compact-after 20 --daemons 3 --lose-daemon"
)
printf '%-46s %-28s %8s %10s %s\n' mode binary seconds seeds/s result
for mode in "${MODES[@]}"; do
  for bin in "$@"; do
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    if "$bin" simulate --runs "$RUNS" --quiet $mode > /dev/null 2>&1; then result=passed; else result=FAILED; fi
    end=$(date +%s.%N)
    python3 -c "import sys; s=float(sys.argv[3])-float(sys.argv[2]); print('%-46s %-28s %8.2f %10.1f %s' % (sys.argv[1] or '(default)', sys.argv[4][-28:], s, int(sys.argv[5])/s, sys.argv[6]))" \
      "$mode" "$start" "$end" "$bin" "$RUNS" "$result"
  done
done
