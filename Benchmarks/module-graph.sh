#!/usr/bin/env bash
# The module graph of Package.swift: each target, its lines of Swift (wc -l over its folder), and
# the targets it depends on. For the before/after notes of a refactoring (issue 46).
#
#   Benchmarks/module-graph.sh            # from the repository root
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - <<'PY'
import re, subprocess, pathlib
text = pathlib.Path("Package.swift").read_text()
rows = []
for m in re.finditer(r'\.(target|executableTarget|testTarget)\(\s*name:\s*"([^"]+)"(.*?)\)\s*,?\s*(?=\n\s*(?://|\.(?:target|executableTarget|testTarget)|\]))', text, re.S):
    kind, name, rest = m.groups()
    deps = re.search(r'dependencies:\s*\[(.*?)\]', rest, re.S)
    deps = re.findall(r'"([^"]+)"', deps.group(1)) if deps else []
    path = re.search(r'path:\s*"([^"]+)"', rest)
    folder = pathlib.Path(path.group(1) if path else ("Tests/" if kind == "testTarget" else "Sources/") + name)
    files = sorted(str(p) for p in folder.rglob("*.swift")) if folder.exists() else []
    lines = sum(len(open(f, encoding="utf-8", errors="replace").read().splitlines()) for f in files)
    rows.append((kind, name, lines, len(files), deps))
for kind, name, lines, count, deps in rows:
    if kind == "testTarget":
        continue
    print(f"{name:24} {lines:6} lines {count:4} files  -> {', '.join(deps) if deps else '(nothing)'}")
PY
