"""Fault fixtures: a private Redis that a test may stop and start (never the shared one), and
real long-running RQ workers (with their recovery loop) that a test may kill."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, use_redis, worker_env

FAST_RECOVERY = {
    "RECOVERY_INTERVAL_SECONDS": "1",
    "JOB_HEARTBEAT_SECONDS": "1",
    "JOB_STALE_SECONDS": "3",
    "QUEUE_LOST_SECONDS": "2",
}
# Tests that wait for the recovery loop run twice (parametrise ``fast`` with these): with
# FAST_RECOVERY in CI (the same code paths, in seconds), and at the default settings, which
# take up to two minutes each, in the long profile only (scripts/test.sh --long).
TIMINGS = [
    pytest.param(True, id="short-timings"),
    pytest.param(False, id="default-timings", marks=pytest.mark.long),
]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its closing ")"
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateRedis:
    """A redis-server of this test's own, without persistence: stopping it loses every queued
    job, as a crashed Redis without AOF would."""

    def __init__(self, port: int, workdir: Path) -> None:
        self.port = port
        self.workdir = workdir
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:  # the port was taken meanwhile
                raise RuntimeError(f"redis-server exited on port {self.port}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def private_redis(settings: Any, tmp_path: Path) -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    # Another test process may take the free port before redis-server binds it: try others.
    for attempt in range(5):
        server = PrivateRedis(_free_port(), tmp_path)
        try:
            server.start()
            break
        except RuntimeError:
            server.stop()
            if attempt == 4:
                raise
    use_redis(settings, server.url)
    yield server
    server.stop()


class Workers:
    def __init__(self, redis: PrivateRedis, log: Path) -> None:
        self.redis = redis
        self.log = log
        self.processes: list[subprocess.Popen[str]] = []

    def start(self, *, fast: bool = True, **env: str) -> subprocess.Popen[str]:
        """A worker with FAST_RECOVERY settings, or (``fast=False``) the defaults."""
        process = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "rqworker",
                "--worker-class",
                "tests.faults.slow_worker.SlowWorker",
                "default",
            ],
            cwd=ROOT,
            env={
                **worker_env(self.redis.url),
                **(FAST_RECOVERY if fast else {}),
                "FAULT_LOG": str(self.log),
                **env,
            },
            stdout=subprocess.DEVNULL,
            stderr=open(self.log.with_suffix(f".worker{len(self.processes)}.err"), "w"),  # noqa: SIM115
            text=True,
            start_new_session=True,  # its own process group: the work horse dies with it
        )
        self.processes.append(process)
        return process

    def kill(self, process: subprocess.Popen[str]) -> None:
        """SIGKILL the worker and its work horse (RQ puts the horse in a process group of its
        own), as the OOM killer or a lost host would."""
        for pid in [*_children(process.pid), process.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=10)

    def lines(self, prefix: str) -> list[str]:
        if not self.log.exists():
            return []
        return [line for line in self.log.read_text().splitlines() if line.startswith(prefix)]

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                self.kill(process)


@pytest.fixture
def workers(private_redis: PrivateRedis, tmp_path: Path) -> Iterator[Workers]:
    group = Workers(private_redis, tmp_path / "faults.log")
    yield group
    group.stop_all()


def wait_for(condition: Callable[[], Any], *, timeout: float = 60.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what or condition}")
