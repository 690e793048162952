#!/usr/bin/env bash
# Runs the libFuzzer harnesses (Docs/Fuzzing.md), one after another.
#
#   Tests/Fuzz/run.sh [--seconds N] [--max-len B] [name...]   # default: 60 s each, every harness
#
# For each harness: builds it (Tests/Fuzz/build.sh); seeds Tests/Fuzz/Corpus/<name>/ from the real
# encoders if it is empty; fuzzes for N seconds starting from that corpus and the full working
# corpus of earlier runs (.build-fuzz/corpus/<name>/, not committed); then merges both into
# Tests/Fuzz/Corpus/<name>/, minimized to a small set that covers every edge any of them covers
# (`-set_cover_merge=1 -use_counters=0`); keeps a crash under Tests/Fuzz/Crashes/<name>/. Prints executions, executions/s and crashes per harness and
# appends them to .build-fuzz/stats.tsv. Exits 1 if any harness crashed.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
FUZZ="$ROOT/Tests/Fuzz"
OUT="${FUZZ_BUILD_DIR:-$ROOT/.build-fuzz}"
SECONDS_EACH=60
MAX_LEN=2048
names=()
while (( $# )); do
    case "$1" in
        --seconds) SECONDS_EACH="$2"; shift 2 ;;
        --max-len) MAX_LEN="$2"; shift 2 ;;
        -h|--help) sed -n 2,10p "$0"; exit 0 ;;
        *) names+=("$1"); shift ;;
    esac
done
if (( ${#names[@]} == 0 )); then
    for f in "$FUZZ"/Harnesses/*.swift; do names+=("$(basename "$f" .swift)"); done
fi

"$FUZZ/build.sh" "${names[@]}" >/dev/null
mkdir -p "$OUT/logs"
failed=0
printf '%-10s %12s %10s %8s %8s\n' harness executions exec/s corpus crashes
for name in "${names[@]}"; do
    bin="$OUT/bin/fuzz-$name"
    corpus="$FUZZ/Corpus/$name"
    crashes="$FUZZ/Crashes/$name"
    work="$OUT/corpus/$name"
    log="$OUT/logs/$name.log"
    mkdir -p "$corpus" "$crashes"
    rm -rf "$work.merged"; mkdir -p "$work" "$work.merged"
    if [[ -z "$(ls -A "$corpus")" ]]; then
        FUZZ_WRITE_SEEDS="$corpus" "$bin" >/dev/null 2>&1
    fi
    before=$(ls "$crashes" | wc -l)
    # New inputs go to $work (the first folder); the committed corpus is read, not written.
    set +e
    "$bin" -max_total_time="$SECONDS_EACH" -max_len="$MAX_LEN" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$crashes/" "$work" "$corpus" >"$log" 2>&1
    status=$?
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    execs=${execs:-0}
    # Keep only what adds coverage: corpus ∪ working corpus, minimized into a fresh folder.
    "$bin" -set_cover_merge=1 -use_counters=0 -max_len="$MAX_LEN" "$work.merged" "$corpus" "$work" >>"$log" 2>&1 || true
    if [[ -n "$(ls -A "$work.merged")" ]]; then
        rm -f "$corpus"/*
        cp "$work.merged"/* "$corpus"/
    fi
    after=$(ls "$crashes" | wc -l)
    found=$(( after - before ))
    if (( status != 0 )); then failed=1; fi
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    rate=${rate:-0}
    printf '%-10s %12s %10s %8s %8s\n' "$name" "$execs" "$rate" "$(ls "$corpus" | wc -l)" "$found"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$name" "$SECONDS_EACH" "$execs" "$found" "$status" >>"$OUT/stats.tsv"
    if (( status != 0 )); then
        echo "  $name stopped with status $status; see $log and $crashes/" >&2
        grep -m3 -E 'ERROR|Fatal error|fuzz property failed' "$log" | sed 's/^/  /' >&2 || true
    fi
done
exit $failed
