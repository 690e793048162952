#!/usr/bin/env python3
"""ysync_load.py: N clients editing one shared list through a pycrdt-websocket server (issue 19).

The peer side of `Benchmarks/load.sh`: the same workload shape as `listsync-load --docs 1
--moves 0 --deletes 0 --kill-after`, on a Yjs sync server instead of ListSync's daemon.

  1. Starts a pycrdt-websocket server (`WebsocketServer` behind its `ASGIServer`, served by
     uvicorn) as a separate process (`ysync_load.py --serve ...`), whose room keeps its updates in
     a `SQLiteYStore` in a fresh temp folder. On start the room loads what the store holds.
  2. Connects N clients (asyncio, in this process), each with its own pycrdt `Doc` and an `Array`
     named "list", speaking the y-websocket sync protocol (pycrdt's message functions) over the
     `websockets` library. (Our own small client rather than `pycrdt.Provider`: the provider sends
     every transaction back to the server, remote ones included, which would double the server's
     traffic; a Yjs browser provider sends only local ones, and so does this client.)
  3. Every client makes E inserts at random positions of the one list, each value
     "author:seq:send-time-ns". A client tells an arriving insert by its update's header (Yjs
     client id = author, clock = seq), in O(1): an Array observer's delta walks the list from its
     start, O(n) per arrival, which made this harness, not the server, the bottleneck at 64
     clients. y-websocket has no acknowledgement; here an edit counts as
     ACKNOWLEDGED once a client other than its author has received it, i.e. the server has
     relayed it. Each client waits until its insert is acknowledged before making the next
     (closed loop, as listsync-load's clients wait for the daemon's acknowledgement).
  4. Measures: time to converge (first edit until every client holds all N*E items, every list
     the same), fan-out latency (author's send time to arrival at each other client: p50/p99),
     the server's RSS (VmRSS) once converged, and the CPU time of the server and of the clients
     over the timed phase.
  5. Kills the server with SIGKILL right after convergence, restarts it on the same SQLite file,
     syncs a fresh client and counts the acknowledged edits that are missing.

Prints one JSON line on stdout (progress on stderr). Every wait has a hard timeout.
--settle S waits S seconds before the kill (how far the store lags); --no-store runs the room in
memory (what the store costs).

  Benchmarks/.venv/bin/python Benchmarks/compare/ysync_load.py --clients 2 --edits 10
  (needs pycrdt-websocket==0.16.5 uvicorn websockets: Benchmarks/load.sh installs them)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from array import array

ROOM = "/list"
ACK_DEFINITION = ("an edit is acknowledged once a client other than its author has received it "
                  "(the server relayed it); y-websocket itself acknowledges nothing")


CLIENT_ID_BASE = 1_000_000  # Yjs client id of author i: CLIENT_ID_BASE + i


def read_var_uint(b: bytes, i: int) -> tuple[int, int]:
    """lib0 variable-length unsigned integer at b[i:]: (value, next index)."""
    num = shift = 0
    while True:
        byte = b[i]
        i += 1
        num |= (byte & 127) << shift
        if byte < 128:
            return num, i
        shift += 7


def update_header(update: bytes) -> tuple[int, int] | None:
    """(client id, first clock) of a Yjs v1 update holding one struct of one client, else None."""
    groups, i = read_var_uint(update, 0)
    if groups != 1:
        return None
    structs, i = read_var_uint(update, i)
    if structs != 1:
        return None
    client, i = read_var_uint(update, i)
    clock, _ = read_var_uint(update, i)
    return client, clock


def log(msg: str) -> None:
    print(f"[ysync] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the server process

def serve(port: int, db: str, store: bool = True) -> None:
    """Run a pycrdt-websocket server on 127.0.0.1:port whose rooms persist in SQLite file db
    (with store False: rooms in memory only, to see what the store costs)."""
    import anyio
    import uvicorn
    from pycrdt import Doc
    from pycrdt.store import SQLiteYStore, YDocNotFound
    from pycrdt.websocket import ASGIServer, WebsocketServer, YRoom, exception_logger

    class Store(SQLiteYStore):
        db_path = db

    class Server(WebsocketServer):
        """A WebsocketServer whose rooms have a SQLiteYStore and start from what it holds."""

        def __init__(self) -> None:
            super().__init__(auto_clean_rooms=False, exception_handler=exception_logger)
            self._loading: dict[str, anyio.Event] = {}

        async def get_room(self, name: str) -> YRoom:
            if name not in self.rooms:
                if name in self._loading:  # another client is loading it: wait for that
                    await self._loading[name].wait()
                else:
                    self._loading[name] = anyio.Event()
                    ystore, doc = None, Doc()
                    if store:
                        ystore = Store(path=name)
                        await self._task_group.start(ystore.start)
                        try:
                            await ystore.apply_updates(doc)
                        except YDocNotFound:
                            pass
                    self.rooms[name] = YRoom(ready=True, ystore=ystore, ydoc=doc,
                                             exception_handler=exception_logger, log=self.log)
                    self._loading[name].set()
            room = self.rooms[name]
            await self.start_room(room)
            return room

    async def main() -> None:
        server = Server()
        async with server:
            config = uvicorn.Config(ASGIServer(server), host="127.0.0.1", port=port,
                                    log_level="warning", lifespan="off")
            await uvicorn.Server(config).serve()

    asyncio.run(main())


class ServerProcess:
    """The server as a child process: started, its RSS read, killed."""

    def __init__(self, db: str, folder: str, store: bool = True) -> None:
        with socket.socket() as s:  # a free port
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log_path = os.path.join(folder, f"server-{self.port}.log")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--serve", "--port", str(self.port), "--db", db]
            + ([] if store else ["--no-store"]),
            stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w"))

    async def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}): {self.log_tail()}")
            try:
                _, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", self.port), 1)
                w.close()
                return
            except (OSError, asyncio.TimeoutError):
                await asyncio.sleep(0.05)
        raise TimeoutError(f"server not listening after {timeout} s: {self.log_tail()}")

    def rss_bytes(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def cpu_seconds(self) -> float:
        """User + system CPU time the server has used (/proc/PID/stat)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill9()

    def log_tail(self) -> str:
        try:
            with open(self.log_path) as f:
                return f.read()[-600:]
        except OSError:
            return ""


# --------------------------------------------------------------------------- the clients

class Stats:
    """What all clients share (one process, one event loop): latencies and acknowledgements."""

    def __init__(self) -> None:
        self.latencies_ns = array("q")
        self.sent_ns: dict[tuple[int, int], int] = {}  # (author, seq): send time (as in the value)
        self.acked: set[tuple[int, int]] = set()  # (author, seq) relayed to another client
        self.clients: list[Client] = []
        self.unparsed = 0  # relayed updates whose header was not one insert (no latency sample)


class Client:
    """One y-websocket client: a pycrdt Doc with an Array "list", synced over one websocket."""

    def __init__(self, idx: int, url: str, target: int, stats: Stats) -> None:
        from pycrdt import Array, Doc
        self.idx, self.url, self.target, self.stats = idx, url, target, stats
        self.doc = Doc(client_id=CLIENT_ID_BASE + idx) if idx >= 0 else Doc()
        self.arr = self.doc.get("list", type=Array)
        self.count = 0  # items held (inserts only: the sum of inserted items)
        self.converged_at: int | None = None  # monotonic ns when it first held `target` items
        self.synced = asyncio.Event()
        self.waiting: tuple[int, asyncio.Event] | None = None  # own insert awaiting its ack
        self.ws = None
        self.reader: asyncio.Task | None = None

    async def connect(self, timeout: float) -> None:
        import websockets
        from pycrdt import create_sync_message
        self.ws = await asyncio.wait_for(websockets.connect(self.url, max_size=None), timeout)
        self.reader = asyncio.create_task(self._read())
        await self.ws.send(create_sync_message(self.doc))
        await asyncio.wait_for(self.synced.wait(), timeout)

    async def _read(self) -> None:
        from pycrdt import YMessageType, YSyncMessageType, handle_sync_message, read_message
        import websockets
        try:
            async for msg in self.ws:
                if isinstance(msg, str) or not msg or msg[0] != YMessageType.SYNC:
                    continue  # awareness: not used here
                reply = handle_sync_message(msg[1:], self.doc)
                if msg[1] == YSyncMessageType.SYNC_STEP2:
                    self.synced.set()
                elif msg[1] == YSyncMessageType.SYNC_UPDATE and self.stats.clients:
                    self._arrived(read_message(msg[2:]))
                if reply is not None:
                    await self.ws.send(reply)
        except websockets.ConnectionClosed:
            pass

    def _arrived(self, update: bytes) -> None:
        """A relayed update applied here: count it, record its latency and acknowledgement."""
        t = time.monotonic_ns()
        st = self.stats
        header = update_header(update)
        if header is None:
            st.unparsed += 1
            return
        author, seq = header[0] - CLIENT_ID_BASE, header[1]
        sent = st.sent_ns.get((author, seq))
        if sent is None or author == self.idx:
            return
        self.count += 1
        st.latencies_ns.append(t - sent)
        key = (author, seq)
        if key not in st.acked:
            st.acked.add(key)
            w = st.clients[author].waiting
            if w is not None and w[0] == seq:
                w[1].set()
        if self.converged_at is None and self.count >= self.target:
            self.converged_at = t

    async def insert(self, seq: int, rng: random.Random, timeout: float) -> None:
        """Insert one value, send the update, wait until another client has it."""
        from pycrdt import create_update_message
        ev = asyncio.Event()
        self.waiting = (seq, ev)
        state = self.doc.get_state()
        sent = time.monotonic_ns()
        self.stats.sent_ns[(self.idx, seq)] = sent
        self.arr.insert(rng.randrange(len(self.arr) + 1), f"{self.idx}:{seq}:{sent}")
        self.count += 1
        if self.converged_at is None and self.count >= self.target:
            self.converged_at = time.monotonic_ns()
        await self.ws.send(create_update_message(self.doc.get_update(state)))
        if (self.idx, seq) not in self.stats.acked:
            await asyncio.wait_for(ev.wait(), timeout)
        self.waiting = None

    def values(self) -> list[str]:
        # Through the JSON text (built in Rust): Array.to_py() reads item by index, O(n^2).
        return json.loads(str(self.arr))

    async def close(self) -> None:
        if self.ws is not None:
            try:
                await asyncio.wait_for(self.ws.close(), 2)
            except Exception:
                pass
        if self.reader is not None:
            self.reader.cancel()


def pct(sorted_ns: list[int], p: float) -> float:
    if not sorted_ns:
        return 0.0
    return sorted_ns[min(len(sorted_ns) - 1, int(len(sorted_ns) * p))] / 1e6


async def run(a: argparse.Namespace) -> dict:
    n, e, timeout = a.clients, a.edits, a.timeout
    folder = tempfile.mkdtemp(prefix="ysync-load-")
    db = os.path.join(folder, "ystore.db")
    result: dict = {"engine": "pycrdt-websocket", "clients": n, "edits_per_client": e,
                    "acknowledged_definition": ACK_DEFINITION, "ok": False}
    servers: list[ServerProcess] = []
    clients: list[Client] = []
    try:
        server = ServerProcess(db, folder, store=not a.no_store)
        servers.append(server)
        await server.wait_ready(timeout)
        url = f"ws://127.0.0.1:{server.port}{ROOM}"
        stats = Stats()
        log(f"server pid {server.proc.pid} on port {server.port}, db {db}")

        # Connected and synced (untimed).
        for i in range(n):
            c = Client(i, url, n * e, stats)
            stats.clients.append(c)
            clients.append(c)
            await c.connect(timeout)
        log(f"{n} clients connected")

        # Timed: every client inserts at once, each insert acknowledged before the next.
        async def author(c: Client) -> None:
            rng = random.Random(a.seed * 1_000_003 + c.idx)
            for seq in range(e):
                await c.insert(seq, rng, timeout)

        async def progress() -> None:
            while True:
                await asyncio.sleep(2)
                log(f"acknowledged {len(stats.acked)}/{n * e}, "
                    f"converged clients {sum(c.count >= n * e for c in clients)}/{n}")

        ticker = asyncio.create_task(progress())
        server_cpu0, own_cpu0 = server.cpu_seconds(), time.process_time()
        start = time.monotonic_ns()
        try:
            await asyncio.wait_for(asyncio.gather(*(author(c) for c in clients)), a.run_timeout)
            edit_seconds = (time.monotonic_ns() - start) / 1e9
            # Convergence: every client holds all N*E items.
            deadline = time.monotonic() + timeout
            while any(c.converged_at is None for c in clients):
                if time.monotonic() > deadline:
                    raise TimeoutError("clients did not converge: counts "
                                       + str(sorted(c.count for c in clients)[:5]))
                await asyncio.sleep(0.005)
        finally:
            ticker.cancel()
        converge_seconds = (max(c.converged_at for c in clients) - start) / 1e9
        rss = server.rss_bytes()
        server_cpu, clients_cpu = server.cpu_seconds() - server_cpu0, time.process_time() - own_cpu0
        disk = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
                   if f.startswith("ystore.db"))
        acked = set(stats.acked)

        # Kill -9 right after convergence (or --settle seconds later); restart on the same
        # SQLite file; a fresh client.
        if a.settle > 0:
            await asyncio.sleep(a.settle)
        server.kill9()
        log(f"server killed (SIGKILL) with {len(acked)} acknowledged edits; restarting")
        lists = [c.values() for c in clients]
        same = all(l == lists[0] for l in lists)
        once = len(set(lists[0])) == len(lists[0]) == n * e
        for c in clients:
            await c.close()
        clients.clear()
        restarted = ServerProcess(db, folder, store=not a.no_store)
        servers.append(restarted)
        await restarted.wait_ready(timeout)
        fresh = Client(-1, f"ws://127.0.0.1:{restarted.port}{ROOM}", 0, Stats())
        clients.append(fresh)
        await fresh.connect(timeout)
        present = set()
        for v in fresh.values():
            author, seq, _ = v.split(":")
            present.add((int(author), int(seq)))
        missing = acked - present

        lat = sorted(stats.latencies_ns)
        result.update({
            "edit_seconds": edit_seconds, "converge_seconds": converge_seconds,
            "converged": same, "items_once": once, "items": len(lists[0]),
            "fanout_p50_ms": pct(lat, 0.5), "fanout_p99_ms": pct(lat, 0.99), "fanout_samples": len(lat),
            "server_rss_bytes": rss, "bytes_on_disk": disk,
            "unparsed_updates": stats.unparsed, "server_cpu_seconds": server_cpu, "clients_cpu_seconds": clients_cpu,
            "acknowledged_inserts": len(acked), "recovered_items": len(present),
            "missing_acknowledged": len(missing), "settle_seconds": a.settle, "store": not a.no_store,
            "ok": same and once,
        })
        log(f"restart holds {len(present)} items; {len(missing)} acknowledged edits missing")
    except Exception as exc:  # a failed run still prints its JSON line
        result["note"] = f"{type(exc).__name__}: {exc}"
        for s in servers:
            if s.proc.returncode != -9 and s.log_tail():
                result["note"] += f" | server on port {s.port}: " + s.log_tail()
        log(f"failed: {result['note']}")
    finally:
        for c in clients:
            await c.close()
        for s in servers:
            s.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Prints one JSON line of results on stdout; progress on stderr.")
    p.add_argument("--clients", type=int, default=2, help="N clients (default 2, at least 2)")
    p.add_argument("--edits", type=int, default=10, help="E inserts per client (default 10)")
    p.add_argument("--seed", type=int, default=1, help="random positions' seed (default 1)")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="hard timeout in seconds of every single wait (default 30)")
    p.add_argument("--run-timeout", type=float, default=600.0,
                   help="hard timeout in seconds of the whole timed phase (default 600)")
    p.add_argument("--settle", type=float, default=0.0,
                   help="seconds to wait after convergence before the kill -9 (default 0: at once)")
    p.add_argument("--no-store", action="store_true",
                   help="rooms without SQLiteYStore (in memory: everything is lost by the kill), "
                        "to see what the store costs")
    p.add_argument("--serve", action="store_true", help="internal: run the server process")
    p.add_argument("--port", type=int, help="internal (--serve): port on 127.0.0.1")
    p.add_argument("--db", help="internal (--serve): the SQLite file")
    a = p.parse_args()
    if a.serve:
        serve(a.port, a.db, store=not a.no_store)
        return
    if a.clients < 2:
        p.error("--clients must be at least 2 (an edit is acknowledged by another client)")
    result = asyncio.run(run(a))
    print(json.dumps(result, sort_keys=True), flush=True)
    sys.exit(0 if result.get("ok") and result.get("missing_acknowledged") == 0 else 1)


if __name__ == "__main__":
    main()
