#!/usr/bin/env python3
"""The SQLite side of W10.store (issue 17): durable single-row inserts per second.

SQLite in WAL mode with synchronous=FULL (every commit fsyncs the WAL), one INSERT per transaction,
for SECONDS seconds: one writer, and 16 writer threads each with its own connection (SQLite
serializes writers; a busy writer waits with busy_timeout). The database goes to $LISTSYNC_BENCH_DIR
or the temporary folder: the same disk as listsync-bench's W10.store files.

    python3 Benchmarks/compare/sqlite_wal.py [--seconds 3]

Prints one JSON object in the compare.sh format.
"""
import argparse, json, os, shutil, sqlite3, tempfile, threading, time


def connect(path):
    c = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=60)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=FULL")
    return c


def writer(path, seconds, start, counts, index, payload):
    c = connect(path)
    n = 0
    while time.perf_counter() - start < seconds:
        c.execute("BEGIN IMMEDIATE")
        c.execute("INSERT INTO ops (payload) VALUES (?)", (payload,))
        c.execute("COMMIT")
        n += 1
    counts[index] = n
    c.close()


def run(folder, writers, seconds):
    path = os.path.join(folder, f"w10-{writers}.db")
    c = connect(path)
    c.execute("CREATE TABLE ops (id INTEGER PRIMARY KEY, payload BLOB)")
    c.close()
    counts = [0] * writers
    payload = os.urandom(24)  # about the payload of a single-op batch record of W10.store
    start = time.perf_counter()
    threads = [threading.Thread(target=writer, args=(path, seconds, start, counts, i, payload)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    size = sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))
    return sum(counts) / elapsed, size / max(1, sum(counts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    base = os.environ.get("LISTSYNC_BENCH_DIR", tempfile.gettempdir())
    folder = tempfile.mkdtemp(prefix="sqlite-w10-", dir=base)
    try:
        one, bytes1 = run(folder, 1, args.seconds)
        sixteen, _ = run(folder, 16, args.seconds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps({"engine": "sqlite-wal", "workload": "W10.store",
                      "metrics": {"appends_per_s_1": one, "appends_per_s_16": sixteen, "bytes_per_op": bytes1},
                      "ops": 0, "ok": True,
                      "note": f"SQLite {sqlite3.sqlite_version}, WAL, synchronous=FULL, one INSERT per transaction"}))


if __name__ == "__main__":
    main()
