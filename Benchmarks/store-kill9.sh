#!/usr/bin/env bash
# kill -9 cycles for the durable store (issue 17): a child appends and prints each acknowledged batch;
# the parent SIGKILLs it at random moments, reopens the store and checks every acknowledged batch.
#
#   bash Benchmarks/store-kill9.sh [CYCLES (default 200)] [SEED]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CYCLES="${1:-200}" SEED="${2:-$RANDOM}"
(cd "$ROOT" && swift build -c release --product listsync-store-probe >&2)
DIR="$(mktemp -d "${TMPDIR:-/tmp}/store-kill9-XXXXXX")"
trap 'rm -rf "$DIR"' EXIT
echo "seed $SEED, folder $DIR" >&2
"$ROOT/.build/release/listsync-store-probe" kill9 "$DIR/doc" --cycles "$CYCLES" --seed "$SEED"
