"""The sandbox itself: results come back, limits stop the child and nothing else, and the
child leaves no process, temporary file or broken database connection behind."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from documents.sandbox import Limits, SandboxFailed, run_sandboxed

FAST = Limits(memory_mb=128, cpu_seconds=5, wall_seconds=5)


def add(a: int, b: int) -> int:
    return a + b


def refuse(message: str) -> None:
    raise ValueError(message)


def allocate(megabytes: int) -> int:
    return len(bytearray(megabytes * 1024 * 1024))


def spin() -> None:
    while True:
        pass


def test_the_result_of_the_child_comes_back():
    assert run_sandboxed(add, 2, b=3, task="t", limits=FAST) == 5


def test_an_exception_in_the_child_is_raised_in_the_parent():
    with pytest.raises(ValueError, match="no thanks"):
        run_sandboxed(refuse, "no thanks", task="t", limits=FAST)


def test_memory_beyond_the_limit_fails_the_child_only():
    with pytest.raises(SandboxFailed) as failed:
        run_sandboxed(allocate, 512, task="t", limits=FAST)
    assert failed.value.reason == "memory"
    assert "more memory" in failed.value.message
    # Within the limit the same function works: the limit, not the function, failed it.
    assert run_sandboxed(allocate, 16, task="t", limits=FAST) == 16 * 1024 * 1024


def test_a_loop_is_stopped_by_the_cpu_limit():
    started = time.monotonic()
    with pytest.raises(SandboxFailed) as failed:
        run_sandboxed(spin, task="t", limits=Limits(memory_mb=64, cpu_seconds=1, wall_seconds=30))
    assert failed.value.reason == "cpu"
    # One CPU second, on a loaded machine several seconds of wall time: well before the wall
    # limit of 30 s, which would have reported "timeout".
    assert time.monotonic() - started < 15


def test_a_child_that_waits_is_killed_at_the_wall_clock():
    started = time.monotonic()
    with pytest.raises(SandboxFailed) as failed:
        run_sandboxed(
            time.sleep, 60, task="t", limits=Limits(memory_mb=64, cpu_seconds=60, wall_seconds=1)
        )
    assert failed.value.reason == "timeout"
    assert time.monotonic() - started < 3


def test_the_idle_clock_restarts_with_each_progress_report():
    def slow_pages(*, report: object) -> int:
        for page in range(4):
            time.sleep(0.3)
            report(page)  # type: ignore[operator]
        return 4

    seen: list[int] = []
    limits = Limits(memory_mb=64, cpu_seconds=10, wall_seconds=10, idle_seconds=0.8)
    assert run_sandboxed(slow_pages, task="t", limits=limits, on_progress=seen.append) == 4
    assert seen == [0, 1, 2, 3]

    def stuck_page(*, report: object) -> None:
        report(1)  # type: ignore[operator]
        time.sleep(30)

    with pytest.raises(SandboxFailed, match="too long"):
        run_sandboxed(stuck_page, task="t", limits=limits, on_progress=seen.append)


def test_a_killed_child_leaves_no_process_and_no_temporary_file(tmp_path: Path):
    marker = tmp_path / "where"

    def start_helper_and_hang() -> None:
        # Like pytesseract: a file in the temporary directory and a helper process.
        scratch = Path(tempfile.mkstemp(prefix="tess_")[1])
        helper = subprocess.Popen(["sleep", "300"])
        marker.write_text(f"{scratch.parent} {helper.pid}")
        time.sleep(300)

    with pytest.raises(SandboxFailed):
        run_sandboxed(
            start_helper_and_hang,
            task="t",
            limits=Limits(memory_mb=128, cpu_seconds=30, wall_seconds=1.5),
        )
    scratch_dir, helper_pid = marker.read_text().split()
    assert Path(scratch_dir).name.startswith("vetted-sandbox-")
    assert not Path(scratch_dir).exists()
    time.sleep(0.1)
    stat = Path(f"/proc/{helper_pid}/stat")
    assert not stat.exists() or stat.read_text().split(") ")[1].startswith("Z")


@pytest.mark.django_db
def test_the_parents_database_connection_survives_the_child(django_user_model):
    django_user_model.objects.create(username="before")
    assert run_sandboxed(os.getpid, task="t", limits=FAST) != os.getpid()
    with pytest.raises(ValueError):
        run_sandboxed(refuse, "x", task="t", limits=FAST)
    with pytest.raises(SandboxFailed):
        run_sandboxed(allocate, 512, task="t", limits=FAST)
    assert django_user_model.objects.filter(username="before").exists()
    django_user_model.objects.create(username="after")
    assert django_user_model.objects.count() == 2


def flood_parser_log() -> list[str]:
    import logging

    kept: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            kept.append(record.getMessage())

    keep = Keep()
    logging.getLogger().addHandler(keep)
    from documents.sandbox import cap_parser_logs

    cap_parser_logs(limit=20)  # as the child does on start; this handler came later
    for number in range(1000):
        logging.getLogger("pdfminer.psparser").error("bad token %d", number)
        logging.getLogger("pdfminer.pdfpage").warning("missing glyph %d", number)
    logging.getLogger("documents.x").error("not a parser")
    return kept


def test_a_parser_flooding_the_log_is_cut_to_a_few_lines():
    kept = run_sandboxed(flood_parser_log, task="t", limits=FAST)
    assert len(kept) == 22
    assert kept[:2] == ["bad token 0", "bad token 1"]
    assert kept[20] == "further parser messages of this file are suppressed"
    assert kept[-1] == "not a parser"
