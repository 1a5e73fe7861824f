"""Virtual environments for the tools we compare against, created on first use.

Peers pin libraries of their own (datatrove, MosaicML streaming...), so each gets a venv under
`bench/.venvs/NAME` instead of sharing mixplane's. A lock file makes concurrent benchmark
scripts wait for one another rather than build the same venv twice.

Example:
    python = ensure_venv("datatrove", ["datatrove[processing]", "spacy"])
    subprocess.run([python, "runner.py"], check=True)
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent / ".venvs"


def ensure_venv(name: str, packages: list[str]) -> str:
    """Create (once) `bench/.venvs/NAME` with `packages` installed; return its python."""
    folder = ROOT / name
    ROOT.mkdir(parents=True, exist_ok=True)
    with open(ROOT / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = folder / ".installed.json"
        wanted = sorted(packages)
        installed = json.loads(stamp.read_text()) if stamp.exists() else []
        python = folder / "bin" / "python"
        if not python.exists():
            venv.create(folder, with_pip=True)
        missing = [p for p in wanted if p not in installed]
        if missing:
            subprocess.run(
                [str(python), "-m", "pip", "install", "--quiet", *missing],
                check=True,
                stdout=sys.stderr,
            )
            stamp.write_text(json.dumps(sorted(set(installed) | set(missing))))
    return str(python)


def ensure_node_packages(name: str, packages: list[str]) -> Path:
    """Install (once) npm `packages` under `bench/.venvs/NAME`; return that folder (its
    `node_modules` is what `node` resolves `require` against from scripts run there)."""
    folder = ROOT / name
    folder.mkdir(parents=True, exist_ok=True)
    with open(ROOT / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = folder / ".installed.json"
        wanted = sorted(packages)
        if not stamp.exists() or json.loads(stamp.read_text()) != wanted:
            subprocess.run(
                ["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund", *wanted],
                check=True,
                stdout=sys.stderr,
            )
            stamp.write_text(json.dumps(wanted))
    return folder
