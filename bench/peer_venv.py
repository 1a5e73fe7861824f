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

    def install(folder: Path, missing: list[str]) -> None:
        if not (folder / "bin" / "python").exists():
            venv.create(folder, with_pip=True)
        pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, *missing], check=True, stdout=sys.stderr)

    return str(_install_once(name, packages, install) / "bin" / "python")


def ensure_node_packages(name: str, packages: list[str]) -> Path:
    """Install (once) npm `packages` under `bench/.venvs/NAME`; return that folder (its
    `node_modules` is what `node` resolves `require` against from scripts run there)."""

    def install(folder: Path, missing: list[str]) -> None:
        npm = ["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund"]
        subprocess.run([*npm, *missing], check=True, stdout=sys.stderr)

    return _install_once(name, packages, install)


def _install_once(name: str, packages: list[str], install) -> Path:
    """`bench/.venvs/NAME`, after `install(folder, missing)` of the packages its stamp does
    not list yet, under a lock so that concurrent scripts do it once."""
    folder = ROOT / name
    folder.mkdir(parents=True, exist_ok=True)
    with open(ROOT / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = folder / ".installed.json"
        installed = json.loads(stamp.read_text()) if stamp.exists() else []
        missing = [p for p in sorted(packages) if p not in installed]
        if missing:
            install(folder, missing)
            stamp.write_text(json.dumps(sorted(set(installed) | set(missing))))
    return folder
