# Sourced by compare.sh and load.sh: the benchmarks' own Python environment, Benchmarks/.venv.
#
#   ensure_venv "import a, b" PACKAGE==VERSION ...
#
# Creates the venv if it is missing, and pip installs the pinned packages unless the import
# statement already works in it. Needs VENV, PY and a log function from the caller.
ensure_venv() {
  local imports="$1"; shift
  if [ ! -x "$PY" ]; then
    log "creating $VENV"
    python3 -m venv "$VENV"
  fi
  if ! "$PY" -c "$imports" 2>/dev/null; then
    log "pip install $*"
    "$PY" -m pip install --quiet --disable-pip-version-check "$@"
  fi
}
