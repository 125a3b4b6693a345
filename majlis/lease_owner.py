"""Who holds an SQLite thread lease: a process identity that survives pid reuse.

A lease row records the holder's pid, boot id, start time and host, so a
process that died without releasing its leases (SIGKILL) is told apart from
a live one, and its leases are cleared at once instead of after their TTL.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ProcessId:
    """Who holds a lease: pid, boot id and the process's start time (a pid-reuse guard).

    ``host`` (the hostname) tells whether pids are comparable at all: a
    process in another container sharing the file has pids this one cannot
    see, so its leases are left to lapse rather than judged dead.
    """

    pid: int
    boot: str
    start: str
    host: str = ""

    @classmethod
    def current(cls, proc: Path = Path("/proc")) -> ProcessId:
        pid = os.getpid()
        return cls(pid, _boot_id(proc), _start_time(proc, pid) or uuid.uuid4().hex,
                   socket.gethostname())

    def alive(self, proc: Path = Path("/proc")) -> bool:
        """Whether this process may still run; False only when it provably does not."""
        if self.host != socket.gethostname():
            return True  # another host or container: its pids are not ours to check
        if self.boot != _boot_id(proc):
            return False
        started = _start_time(proc, self.pid)
        if started is None:
            # No /proc entry: fall back to signalling it (works without /proc too).
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
            return not (proc / "self").exists()
        return started == self.start and not _exited(proc, self.pid)


def _boot_id(proc: Path) -> str:
    try:
        return (proc / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _exited(proc: Path, pid: int) -> bool:
    """Whether PID is a zombie (state Z) or dead (X): it has exited, only its parent
    has not reaped it yet, so it runs no turn and its leases are free to clear.
    (A server killed by SIGKILL under a supervisor that reaps late stays a zombie.)"""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] in {"Z", "X"}


def _start_time(proc: Path, pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (clock ticks since boot); None: no such process."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its ")".
    return stat.rpartition(")")[2].split()[19]
