"""The engine stands alone: no module of it imports Django or one of Vetted's apps."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("django", "config", "documents", "reliability", "review", "benchmarks")

PROBE = """
import importlib, json, pkgutil, sys
import engine
names = [m.name for m in pkgutil.walk_packages(engine.__path__, "engine.")]
for name in names:
    importlib.import_module(name)
loaded = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps({"modules": names, "loaded": loaded}))
"""


def test_every_engine_module_imports_without_django_or_an_app():
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(result.stdout)
    assert "engine.pipeline" in report["modules"] and "engine.llm.client" in report["modules"]
    assert len(report["modules"]) >= 20
    leaked = [name for name in FORBIDDEN if name in report["loaded"]]
    assert leaked == [], f"the engine imported {leaked}"


def test_the_probe_would_notice_a_django_import(tmp_path):
    """The check is real: a module that imports Django shows up as loaded."""
    (tmp_path / "leaky.py").write_text("import django\n")
    result = subprocess.run(
        [sys.executable, "-c", "import sys, leaky; print('django' in sys.modules)"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tmp_path}:{ROOT}"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == "True"


def test_each_provider_sdk_is_imported_by_one_module_of_the_llm_package():
    """CONVENTIONS 7: google.genai only in engine/llm/client.py, openai only in
    engine/llm/openai_client.py; everything else gets a client object."""
    import ast

    owners = {"google.genai": "engine/llm/client.py", "openai": "engine/llm/openai_client.py"}
    found: dict[str, set[str]] = {sdk: set() for sdk in owners}
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith((".venv/", "tests/", "var/")) or "/site-packages/" in relative:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                for sdk in owners:
                    if name == sdk or name.startswith(f"{sdk}."):
                        found[sdk].add(relative)
    assert found == {sdk: {owner} for sdk, owner in owners.items()}
