"""The `mixplane[load]` install of a training node: no processing stack, and the loader,
catalog and mixture commands work in full.

These tests run in a virtual environment of their own, made by `make test` with
`pip install mixplane[load]` only (see the Makefile), so a module of the processing stack
imported on the loading path fails here.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

PROCESSING = [
    "trafilatura",
    "warcio",
    "fastwarc",
    "resiliparse",
    "ftfy",
    "py3langid",
    "tokenizers",
    "tiktoken",
    "sentencepiece",
]


def test_the_processing_stack_is_not_installed():
    assert [name for name in PROCESSING if importlib.util.find_spec(name)] == []


def test_importing_the_loader_imports_no_processing_code():
    code = (
        "import sys, mixplane.load, mixplane.load.torch.adapter, mixplane.catalog\n"
        "print(sorted(m for m in sys.modules if m.startswith(('mixplane.process', "
        "'mixplane.stages', 'mixplane.synth', 'mixplane.tokenize', 'mixplane.io.readers'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def mixture(tmp_path_factory) -> Path:
    from mixplane.load.tools.synthetic import write_catalog

    folder = tmp_path_factory.mktemp("lean")
    catalog = write_catalog(
        str(folder),
        {
            "wiki": {"documents": 200, "seed": 1, "source": "wiki", "mean_tokens": 60},
            "code": {"documents": 200, "seed": 2, "source": "code", "mean_tokens": 80},
        },
    )
    spec = {
        "catalog": catalog,
        "seq_len": 64,
        "eos_id": 0,
        "global_batch_size": 8,
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 0.7},
            "code": {"where": "source = 'code'", "weight": 0.3},
        },
    }
    path = folder / "mixture.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_stream_and_resume_with_workers(mixture):
    from mixplane.load import MixtureDataset
    from mixplane.load.torch import torch_loader

    def take(dataset, count):
        loader = torch_loader(dataset, batch_size=8, num_workers=2)
        batches = []
        for batch in loader:
            batches.append(batch["index"].tolist())
            if len(batches) == count:
                return batches

    first = MixtureDataset(str(mixture))
    head = take(first, 5)
    resumed = MixtureDataset(str(mixture))
    resumed.load_state_dict(first.state_dict())
    tail = take(resumed, 3)
    assert sum(head + tail, []) == list(range(64))


def mixplane(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "mixplane", *args]
    return subprocess.run(command, capture_output=True, text=True)


def test_catalog_and_mixture_commands_work(mixture):
    catalog = str(mixture.parent / "catalog.duckdb")
    done = mixplane("query", "source = 'wiki'", "--count", "--catalog", catalog, "--json")
    assert done.returncode == 0, done.stderr
    done = mixplane("mix", "preview", str(mixture), "--steps", "10", "--json")
    assert done.returncode == 0, done.stderr
    assert '"sequences": 80' in done.stdout


def test_processing_commands_say_what_to_install(tmp_path):
    done = mixplane("process", str(tmp_path / "pipeline.yaml"))
    assert done.returncode == 2
    assert "pip install 'mixplane[process]'" in done.stderr
    assert "Traceback" not in done.stderr
