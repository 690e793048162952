#!/usr/bin/env bash
# Builds the libFuzzer harnesses of Tests/Fuzz/Harnesses (Docs/Fuzzing.md).
#
#   Tests/Fuzz/build.sh [name...]        # default: every harness
#
# SwiftPM cannot link a libFuzzer binary (an executable target has its own `main`), so this script
# compiles the library modules straight from Sources/ with swiftc, in dependency order, each with
# `-sanitize=fuzzer,address -enable-testing` (coverage, ASan, and `@testable import` for internal
# types such as FrameDecoder), into .build-fuzz/modules/; then links each harness against them.
# A module is rebuilt only when one of its sources is newer than its object file.
# Nothing under Tests/Fuzz is a SwiftPM target: Package.swift does not name it.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${FUZZ_BUILD_DIR:-$ROOT/.build-fuzz}"
MOD="$OUT/modules"
BIN="$OUT/bin"
mkdir -p "$MOD" "$BIN"
SWIFTC="${SWIFTC:-swiftc}"
# -assert-config Debug: optimized, but `assert` and `precondition` still checked, so that an input
# that breaks an assertion (which a debug build, and the corpus replay in `swift test`, would trap
# on) is found by the fuzzer too.
FLAGS=(-O -assert-config Debug -swift-version 6 -package-name listsync -enable-testing -sanitize=fuzzer,address -parse-as-library -I "$MOD")
# Objects built with other flags are stale.
if [[ "$(cat "$MOD/.flags" 2>/dev/null)" != "${FLAGS[*]}" ]]; then
    rm -f "$MOD"/*.o
    printf '%s' "${FLAGS[*]}" > "$MOD/.flags"
fi

# The C module for epoll/eventfd (SwiftPM writes this module map itself).
mkdir -p "$MOD/CListSyncLinux"
cat > "$MOD/CListSyncLinux/module.modulemap.new" <<EOF
module CListSyncLinux {
    header "$ROOT/Sources/CListSyncLinux/include/CListSyncLinux.h"
    export *
}
EOF
if ! cmp -s "$MOD/CListSyncLinux/module.modulemap.new" "$MOD/CListSyncLinux/module.modulemap" 2>/dev/null; then
    mv "$MOD/CListSyncLinux/module.modulemap.new" "$MOD/CListSyncLinux/module.modulemap"
else
    rm "$MOD/CListSyncLinux/module.modulemap.new"
fi
if [[ ! -f "$MOD/CListSyncLinux.o" || "$ROOT/Sources/CListSyncLinux/shim.c" -nt "$MOD/CListSyncLinux.o" ]]; then
    clang -c -O2 -I "$ROOT/Sources/CListSyncLinux/include" "$ROOT/Sources/CListSyncLinux/shim.c" -o "$MOD/CListSyncLinux.o"
fi

# module name, then the modules it imports (already built).
build_module() {
    local name="$1"
    local sources
    mapfile -t sources < <(find "$ROOT/Sources/$name" -name '*.swift' | sort)
    local obj="$MOD/$name.o"
    local stale=0
    if [[ ! -f "$obj" ]]; then stale=1; else
        for s in "${sources[@]}"; do [[ "$s" -nt "$obj" ]] && { stale=1; break; }; done
        # A dependency rebuilt after us: rebuild too.
        shift
        for d in "$@"; do [[ "$MOD/$d.o" -nt "$obj" ]] && stale=1; done
    fi
    if (( stale )); then
        echo "build.sh: compiling module $name (${#sources[@]} files)" >&2
        "$SWIFTC" "${FLAGS[@]}" -module-name "$name" -wmo -I "$MOD/CListSyncLinux" \
            -emit-module -emit-module-path "$MOD/$name.swiftmodule" -c -o "$obj.tmp" "${sources[@]}"
        mv "$obj.tmp" "$obj"
    fi
}

build_module ListSyncIdentity
build_module ListCRDT ListSyncIdentity
build_module ListTable ListCRDT
build_module ListSyncTransport
build_module ListSync ListCRDT ListTable ListSyncTransport
build_module ListSyncCrypto
build_module ListSyncTCP ListSyncTransport ListSyncIdentity ListSyncCrypto
build_module ListSyncHTTP ListSyncTransport ListSyncTCP ListSyncCrypto
build_module ListSyncNATS ListSyncTransport ListSyncTCP
build_module ListStore ListCRDT
build_module ListSyncFiles ListCRDT ListSync ListStore ListSyncCrypto ListSyncTCP
build_module ListSyncServer ListCRDT ListTable ListSync ListSyncTCP ListSyncHTTP ListStore ListSyncCrypto ListSyncNATS ListSyncFiles

OBJECTS=("$MOD"/ListSyncIdentity.o "$MOD"/ListCRDT.o "$MOD"/ListTable.o "$MOD"/ListSyncTransport.o "$MOD"/ListSync.o "$MOD"/ListSyncCrypto.o "$MOD"/CListSyncLinux.o
         "$MOD"/ListSyncTCP.o "$MOD"/ListSyncHTTP.o "$MOD"/ListSyncNATS.o "$MOD"/ListStore.o "$MOD"/ListSyncFiles.o "$MOD"/ListSyncServer.o)

# Extra sources compiled into a harness (the CLI's parsing lives in the executable target).
extra_sources() {
    case "$1" in
        cli) echo "$ROOT/Sources/listsync/Options.swift" ;;
        *) ;;
    esac
}

# Shared by every harness: the entry points, input helpers and seed documents; the input reader is
# the one the corpus replay suites use.
SUPPORT=("$ROOT"/Tests/Fuzz/Harnesses/Support/*.swift "$ROOT/Sources/ListSyncTestSupport/FuzzInput.swift")

names=("$@")
if (( ${#names[@]} == 0 )); then
    for f in "$ROOT"/Tests/Fuzz/Harnesses/*.swift; do names+=("$(basename "$f" .swift)"); done
fi
for name in "${names[@]}"; do
    src="$ROOT/Tests/Fuzz/Harnesses/$name.swift"
    [[ -f "$src" ]] || { echo "build.sh: no harness $src" >&2; exit 1; }
    bin="$BIN/fuzz-$name"
    mapfile -t extra < <(extra_sources "$name")
    stale=0
    [[ -f "$bin" ]] || stale=1
    for f in "$src" "${SUPPORT[@]}" "${extra[@]}" "${OBJECTS[@]}"; do
        [[ -f "$bin" && "$f" -nt "$bin" ]] && stale=1
    done
    if (( stale )); then
        echo "build.sh: linking fuzz-$name" >&2
        # ld.gold warns about ASan's local symbols; harmless.
        "$SWIFTC" "${FLAGS[@]}" -module-name "Fuzz_$name" -I "$MOD/CListSyncLinux" \
            "$src" "${SUPPORT[@]}" "${extra[@]}" "${OBJECTS[@]}" -o "$bin" \
            2> >(grep -v "Cannot export local symbol '__asan" >&2)
    fi
    echo "$bin"
done
