"""Submit the hostile file set (benchmarks.hostile) to a running Vetted and print, per file,
what became of it, how long it took and the peak memory of the web and worker processes.

    manage.py bench_hostile --url http://127.0.0.1:8000 --token KEY \\
        --watch-pid <gunicorn master pid> --watch-pid <rqworker pid> --json hostile.json

Memory is measured, not estimated: while each file is processed a thread samples the resident
memory (VmRSS) of the watched processes and all their descendants every 20 ms. Descendants
named ``vetted-sandbox`` (the parse children, documents.sandbox) and ``tesseract`` count as
the sandbox; every other one (gunicorn workers, RQ work horses) as the host, which must stay
flat. A second thread asks ``/healthz`` every 100 ms and keeps the slowest answer.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

import requests
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks.hostile import hostile_set

SANDBOX_NAMES = {"vetted-sandbox", "tesseract"}
FINAL = {"failed", "completed", "waiting", "ready"}


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _rss_kb(pid: int) -> tuple[str, int]:
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return name, int(line.split()[1])
    except OSError:
        pass
    return "", 0


class RssSampler(threading.Thread):
    """Peak RSS of the host processes (each) and of the sandbox processes (each)."""

    def __init__(self, roots: list[int]) -> None:
        super().__init__(daemon=True)
        self.roots = roots
        self.stop = threading.Event()
        self.host_kb = 0
        self.sandbox_kb = 0

    def reset(self) -> None:
        self.host_kb = self.sandbox_kb = 0

    def run(self) -> None:
        while not self.stop.wait(0.02):
            tree = _children()
            pending, seen = list(self.roots), set()
            while pending:
                pid = pending.pop()
                if pid in seen:
                    continue
                seen.add(pid)
                pending.extend(tree.get(pid, []))
                name, rss = _rss_kb(pid)
                if name in SANDBOX_NAMES:
                    self.sandbox_kb = max(self.sandbox_kb, rss)
                else:
                    self.host_kb = max(self.host_kb, rss)


class HealthProbe(threading.Thread):
    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.stop = threading.Event()
        self.slowest = 0.0
        self.failures = 0

    def reset(self) -> None:
        self.slowest, self.failures = 0.0, 0

    def run(self) -> None:
        while not self.stop.wait(0.1):
            started = time.monotonic()
            try:
                ok = requests.get(self.url, timeout=10).status_code == 200
            except requests.RequestException:
                ok = False
            self.slowest = max(self.slowest, time.monotonic() - started)
            self.failures += 0 if ok else 1


class Command(BaseCommand):
    help = "Submit generated hostile PDFs to a running Vetted; print outcome, time, peak RSS."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", required=True, help="the running Vetted, e.g. http://…")
        parser.add_argument("--token", required=True, help="an API token (create_api_token)")
        parser.add_argument(
            "--watch-pid",
            type=int,
            action="append",
            default=[],
            help="a web or worker process to measure, with its descendants (repeatable)",
        )
        parser.add_argument("--scale", type=float, default=1.0, help="shrink the bombs")
        parser.add_argument("--only", action="append", default=[], help="file names to run")
        parser.add_argument("--timeout", type=float, default=900.0, help="per file, seconds")
        parser.add_argument("--json", dest="json_path", help="write the results here")

    def handle(self, *args: Any, **options: Any) -> None:
        base = options["url"].rstrip("/")
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {options['token']}"
        sampler = RssSampler(options["watch_pid"])
        probe = HealthProbe(f"{base}/healthz")
        sampler.start()
        probe.start()
        results = []
        self.stdout.write(
            f"{'file':<20} {'size':>10} {'outcome':<10} {'seconds':>8} {'host MB':>8} "
            f"{'sandbox MB':>10} {'healthz s':>9}  message"
        )
        try:
            for hostile in hostile_set(scale=options["scale"]):
                if options["only"] and hostile.name not in options["only"]:
                    continue
                # A unique comment after %%EOF: the same file can be submitted on every run.
                data = hostile.make() + b"\n%% bench " + secrets.token_hex(8).encode() + b"\n"
                sampler.reset()
                probe.reset()
                started = time.monotonic()
                outcome, message = self._submit(
                    session, base, hostile.name, data, options["timeout"]
                )
                seconds = time.monotonic() - started
                time.sleep(0.1)  # one more sample after the end
                row = {
                    "file": hostile.name,
                    "attack": hostile.attack,
                    "bytes": len(data),
                    "outcome": outcome,
                    "message": message,
                    "seconds": round(seconds, 2),
                    "host_peak_rss_mb": round(sampler.host_kb / 1024, 1),
                    "sandbox_peak_rss_mb": round(sampler.sandbox_kb / 1024, 1),
                    "healthz_slowest_seconds": round(probe.slowest, 3),
                    "healthz_failures": probe.failures,
                }
                results.append(row)
                self.stdout.write(
                    f"{row['file']:<20} {row['bytes']:>10} {outcome:<10} {seconds:>8.2f} "
                    f"{row['host_peak_rss_mb']:>8} {row['sandbox_peak_rss_mb']:>10} "
                    f"{row['healthz_slowest_seconds']:>9}  {message[:110]}"
                )
        finally:
            sampler.stop.set()
            probe.stop.set()
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(results, indent=2) + "\n")

    def _submit(
        self, session: requests.Session, base: str, name: str, data: bytes, timeout: float
    ) -> tuple[str, str]:
        try:
            response = session.post(
                f"{base}/api/v1/documents/", files={"file": (name, data)}, timeout=timeout
            )
        except requests.RequestException as exc:
            return "error", f"upload request failed: {exc}"
        body = response.json() if "json" in response.headers.get("Content-Type", "") else {}
        if response.status_code != 202:
            return f"refused {response.status_code}", str(body.get("error", response.text[:200]))
        status_url = f"{base}/api/v1/documents/{body['id']}/"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = session.get(status_url, timeout=30).json()
            if state.get("status") in FINAL:
                return str(state["status"]), str(state.get("error", ""))
            time.sleep(0.25)
        raise CommandError(f"{name}: still {state.get('status')} after {timeout} s")
