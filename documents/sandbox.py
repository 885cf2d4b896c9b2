"""Run a parse of an untrusted file in a child process with CPU, memory and wall-clock limits.

Pure module (no Django import). ``run_sandboxed(fn, ...)`` forks; the child puts itself in its
own process group, lowers its limits (RLIMIT_AS, RLIMIT_CPU, no core files), gets a private
temporary directory, calls ``fn`` and sends the pickled result back through a pipe. The parent
waits with a deadline, kills the whole group (the child and any tesseract it started) when the
deadline passes, removes the temporary directory in any case, and raises ``SandboxFailed``
naming the limit that stopped the parse. The calling web or RQ worker never grows: only the
result crosses the pipe.

Why ``os.fork`` rather than ``multiprocessing``: it is the same "fork" start method, but the
parent reaps the child with ``os.wait4``, which gives the child's measured peak memory (its
own and its reaped children's, tesseract included), and the child can be killed as a process
group. Fork also passes ``fn`` and its arguments without pickling them, so functions
monkeypatched in tests reach the child unchanged.

The child never touches the database: ``fn`` must be a pure function. The Django connections
it inherits are parked (kept referenced, so nothing closes the parent's sockets) and the child
leaves through ``os._exit``, which runs no cleanup that could write to a shared socket.
"""

from __future__ import annotations

import collections
import contextlib
import faulthandler
import gc
import logging
import os
import pickle
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

CHILD_NAME = b"vetted-sandbox"  # the child's process name (ps, top, bench_hostile)
_HEADER = struct.Struct(">Q")
_PROGRESS, _RESULT, _RAISED, _FAILED = "progress", "result", "raised", "failed"

# The last few runs, newest last: what ran, how it ended, how long and how much memory.
REPORTS: collections.deque[SandboxReport] = collections.deque(maxlen=100)


@dataclass(frozen=True)
class Limits:
    """``memory_mb``: address space the parse may add to the process it was forked from
    (RLIMIT_AS is set to the size at fork plus this); ``cpu_seconds``: RLIMIT_CPU of the
    child; ``wall_seconds``: killed after this long; ``idle_seconds``: killed when this long
    passes without a progress report (None: only the wall clock counts); ``nice``: added to
    the child's niceness (background work yields the CPU to requests)."""

    memory_mb: int
    cpu_seconds: int
    wall_seconds: float
    idle_seconds: float | None = None
    max_result_mb: int = 256
    nice: int = 0


@dataclass(frozen=True)
class SandboxReport:
    task: str
    outcome: str  # "ok", "raised", "memory", "cpu", "timeout", "crashed", "too_large"
    seconds: float
    peak_rss_kb: int  # the child's peak resident memory (with its reaped children)
    address_limit_kb: int  # the RLIMIT_AS the child ran under
    parent_peak_rss_kb: int  # the peak resident memory of the calling web or RQ worker


class SandboxFailed(Exception):
    """The parse was stopped by a limit or crashed. ``reason`` is one of "memory", "cpu",
    "timeout", "crashed", "too_large"; ``message`` is written for the uploader."""

    def __init__(self, reason: str, message: str, report: SandboxReport | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.report = report


REASON_TEXT = {
    "memory": "it needs more memory than a document may use",
    "cpu": "it takes more processing time than a document may use",
    "timeout": "reading it took too long",
    "crashed": "the PDF reader stopped on it",
    "too_large": "it produces more data than a document may",
}


def _status_kb(field: str) -> int:
    """A memory figure of this process from /proc/self/status (VmSize, VmHWM, VmRSS), in KB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


PARSER_LOGGERS = ("pdfminer", "pdfplumber", "PIL", "pytesseract", "pypdfium2")


class _CappedLog(logging.Filter):
    """Let the first ``limit`` parser records through, then one notice, then nothing (pdfminer
    can warn once per character: 49,000 lines for one hostile page). Set on the handlers, so
    it also sees the records of child loggers (pdfminer.psparser, ...)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.seen = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(PARSER_LOGGERS):
            return True
        decided = getattr(record, "_vetted_capped", None)  # one record, several handlers
        if decided is None:
            self.seen += 1
            decided = self.seen <= self.limit + 1
            if self.seen == self.limit + 1:
                record.msg, record.args = "further parser messages of this file are suppressed", ()
            record._vetted_capped = decided
        return bool(decided)


def cap_parser_logs(*, limit: int = 20) -> None:
    """In the child: parser loggers keep only errors, and all handlers pass at most ``limit``
    parser records."""
    for name in PARSER_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    capped = _CappedLog(limit)
    handlers = {
        h
        for log in logging.Logger.manager.loggerDict.values()
        if isinstance(log, logging.Logger)
        for h in log.handlers
    }
    for handler in handlers | set(logging.getLogger().handlers):
        handler.addFilter(capped)


_PARKED: list[Any] = []


def _park_inherited_connections() -> None:
    """Make the child unable to use, or close, the parent's database connections."""
    db = sys.modules.get("django.db")
    if db is None:
        return
    with contextlib.suppress(Exception):
        for connection in db.connections.all(initialized_only=True):
            _PARKED.append(connection.connection)  # kept alive: never finalised in the child
            connection.connection = None


def _send(fd: int, kind: str, payload: Any) -> None:
    data = pickle.dumps((kind, payload), protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _child(
    fd: int,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    limits: Limits,
    address_limit: int,
    temp_dir: str,
    progress: bool,
) -> None:
    code = 0
    try:
        # The objects inherited from the parent are never collected here: without this, the
        # child's first full collection walks (so copies, page by page) the parent's heap.
        gc.freeze()
        os.setpgid(0, 0)
        # A C library aborting under the limits is expected here: no interpreter dump in the log.
        faulthandler.disable()
        with contextlib.suppress(OSError), open("/proc/self/comm", "wb") as comm:
            comm.write(CHILD_NAME)
        _park_inherited_connections()
        os.environ["TMPDIR"] = temp_dir
        tempfile.tempdir = temp_dir
        if limits.nice:
            os.nice(limits.nice)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_AS, (address_limit, address_limit))
        cap_parser_logs()
        if progress:
            kwargs = {**kwargs, "report": lambda value: _send(fd, _PROGRESS, value)}
        result = fn(*args, **kwargs)
        _send(fd, _RESULT, result)
    except MemoryError:
        with contextlib.suppress(BaseException):
            _send(fd, _FAILED, "memory")
        code = 3
    except Exception as exc:
        try:
            _send(fd, _RAISED, exc)
        except BaseException:
            with contextlib.suppress(BaseException):
                _send(fd, _FAILED, "crashed")
        code = 1
    except BaseException:
        code = 2
    finally:
        os._exit(code)


def _reason_from_status(status: int) -> str:
    """Why a child ended without a message: RLIMIT_CPU sends SIGXCPU, then SIGKILL at the hard
    limit; anything else (a segfault or abort in a C library out of memory) is a crash."""
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
        return "cpu"
    return "crashed"


def run_sandboxed(
    fn: Callable[..., Any],
    *args: Any,
    task: str,
    limits: Limits,
    on_progress: Callable[[Any], None] | None = None,
    **kwargs: Any,
) -> Any:
    """``fn(*args, **kwargs)`` in a limited child; its return value, or the exception it
    raised (re-raised here), or ``SandboxFailed``. With ``on_progress``, ``fn`` also gets
    ``report=`` (a callable); each value it reports is passed to ``on_progress`` in the parent
    and restarts the idle clock."""
    started = time.monotonic()
    temp_dir = tempfile.mkdtemp(prefix="vetted-sandbox-")
    address_limit = _status_kb("VmSize") * 1024 + limits.memory_mb * 1024 * 1024
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child leaves through os._exit
        os.close(read_fd)
        _child(
            write_fd,
            fn,
            args,
            kwargs,
            limits,
            address_limit,
            temp_dir,
            on_progress is not None,
        )
    os.close(write_fd)
    message: tuple[str, Any] | None = None
    reason: str | None = None
    status, peak_kb = 0, 0
    try:
        deadline = started + limits.wall_seconds
        idle_deadline = started + limits.idle_seconds if limits.idle_seconds else deadline
        buffer = bytearray()
        while True:
            now = time.monotonic()
            wait = min(deadline, idle_deadline) - now
            if wait <= 0:
                reason = "timeout"
                break
            ready, _, _ = select.select([read_fd], [], [], wait)
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            buffer += chunk
            while len(buffer) >= _HEADER.size:
                (size,) = _HEADER.unpack_from(buffer)
                if size > limits.max_result_mb * 1024 * 1024:
                    reason = "too_large"
                    break
                if len(buffer) < _HEADER.size + size:
                    break
                kind, payload = pickle.loads(bytes(buffer[_HEADER.size : _HEADER.size + size]))
                del buffer[: _HEADER.size + size]
                if kind == _PROGRESS:
                    if limits.idle_seconds:
                        idle_deadline = time.monotonic() + limits.idle_seconds
                    if on_progress is not None:
                        on_progress(payload)
                else:
                    message = (kind, payload)
            if reason is not None:
                break
    finally:
        # Kill the group (the child if still running, and any tesseract it started) before
        # reaping, so the group id cannot have been reused.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            _, status, usage = os.wait4(pid, 0)
            peak_kb = usage.ru_maxrss
        os.close(read_fd)
        shutil.rmtree(temp_dir, ignore_errors=True)

    seconds = time.monotonic() - started
    if reason is None:
        if message is None:
            reason = _reason_from_status(status)
        elif message[0] == _FAILED:
            reason = str(message[1])
    outcome = reason or ("ok" if message and message[0] == _RESULT else "raised")
    report = SandboxReport(
        task=task,
        outcome=outcome,
        seconds=round(seconds, 3),
        peak_rss_kb=peak_kb,
        address_limit_kb=address_limit // 1024,
        parent_peak_rss_kb=_status_kb("VmHWM"),
    )
    REPORTS.append(report)
    logger.info(
        "sandbox task=%s outcome=%s seconds=%.2f peak_rss_mb=%.0f limit_mb=%.0f "
        "parent_peak_rss_mb=%.0f",
        task,
        outcome,
        seconds,
        peak_kb / 1024,
        address_limit / (1024 * 1024),
        report.parent_peak_rss_kb / 1024,
    )
    if reason is not None:
        raise SandboxFailed(reason, REASON_TEXT.get(reason, reason), report)
    assert message is not None
    kind, payload = message
    if kind == _RAISED:
        raise payload
    return payload
