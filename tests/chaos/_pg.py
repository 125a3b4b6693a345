"""A private PostgreSQL for fault tests, and a TCP proxy that can cut it off.

The shared PostgreSQL at 127.0.0.1:5432 is never stopped: a test that needs
the database to go away ``initdb``s its own instance in a temporary folder on a
free port (unix socket in that folder, TCP on 127.0.0.1 only) and restarts it
with ``pg_ctl``. initdb refuses to run as root, so as root it runs as the
``postgres`` OS user.

:class:`DroppingProxy` sits between the service and PostgreSQL: ``drop()``
closes every proxied connection at once and refuses new ones until
``restore()`` — a network partition, as opposed to a database restart;
``stall()`` accepts new connections but forwards nothing until ``restore()`` —
a connect that neither succeeds nor fails (a black hole, or a database too
slow to take it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from tests.conftest import _unavailable

BIN = Path(os.environ.get("DIWANIYA_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivatePostgres:
    """An initdb'd PostgreSQL owned by one test module; ``stop()``/``start()`` at will."""

    def __init__(self) -> None:
        if not (BIN / "initdb").exists():
            _unavailable(f"PostgreSQL binaries not found in {BIN} (set DIWANIYA_TEST_PG_BIN)")
        self._as: list[str] = []
        self.root = Path(tempfile.mkdtemp(prefix="diwaniya-chaos-pg-"))
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                _unavailable("running as root without a 'postgres' OS user for initdb")
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        self.data = self.root / "data"
        self.port = free_port()
        self.log = self.root / "postgres.log"
        self._run(BIN / "initdb", "-D", self.data, "-A", "trust", "-U", "postgres",
                  "--no-sync", "-E", "UTF8", "--locale=C.UTF-8")
        self.start()

    @property
    def dsn(self) -> str:
        return self.dsn_at(self.port)

    @staticmethod
    def dsn_at(port: int) -> str:
        return f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def _run(self, *args: object) -> None:
        subprocess.run([*self._as, *map(str, args)], check=True, capture_output=True,
                       timeout=120)

    def start(self) -> None:
        # fsync off: this database holds test data only, and start/stop is quicker.
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                "-c fsync=off -c full_page_writes=off -c max_connections=300")
        self._run(BIN / "pg_ctl", "-D", self.data, "-l", self.log, "-o", opts, "-w",
                  "-t", "60", "start")

    def stop(self, mode: str = "immediate") -> None:
        """``immediate``: like a crash, every session dies at once."""
        self._run(BIN / "pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def close(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


class DroppingProxy:
    """asyncio TCP proxy 127.0.0.1:``port`` → ``upstream``; ``drop()`` partitions it."""

    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self.refusing = False
        self._flowing = asyncio.Event()
        self._flowing.set()
        self.port = 0

    async def start(self) -> DroppingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            writer.close()
            return
        await self._flowing.wait()  # stall(): held here, neither refused nor served
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._upstream)
        except OSError:
            writer.close()
            return
        self._open |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self._open -= {writer, up_writer}

    def drop(self) -> None:
        """Close every proxied connection now and refuse new ones (until ``restore``)."""
        self.refusing = True
        for w in list(self._open):
            transport = w.transport
            # abort(): a reset, not a polite close — what a partition looks like.
            transport.abort()
        self._open.clear()

    def stall(self) -> None:
        """Leave connections made from now on hanging (connected, never answered)."""
        self._flowing.clear()

    def restore(self) -> None:
        self.refusing = False
        self._flowing.set()

    async def close(self) -> None:
        self.drop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
