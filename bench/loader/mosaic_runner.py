"""MosaicML streaming, run with its own environment's python (bench/.venvs/streaming).

    python mosaic_runner.py build DATA_FOLDER
    python mosaic_runner.py run DATA_FOLDER --workers W --batch B --batches N

`build` writes one MDS dataset per component from the same packed sequences the other tools
read; `run` blends them with three `Stream`s in the mixture's proportions through a
`StreamingDataset` and feeds the fixed consumer. Prints one `RESULT {json}` line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parent))

from consume import add_run_options, consume, report  # noqa: E402

# The same as data.WEIGHTS (data.py needs mixplane, which this environment lacks).
WEIGHTS = {"wiki": 0.5, "code": 0.3, "web_de": 0.2}


def import_streaming_base() -> None:
    """Load `streaming.base` without running `streaming/__init__.py`.

    That file also imports streaming's vision datasets, which need torchvision; the only
    torchvision on PyPI is built for CUDA torch and fails to load next to the CPU torch here.
    `streaming.base` (StreamingDataset, Stream, MDSWriter) does not use it.
    """
    import importlib.util
    import types

    if "streaming" in sys.modules:
        return
    found = importlib.util.find_spec("streaming")
    package = types.ModuleType("streaming")
    package.__path__ = list(found.submodule_search_locations)
    sys.modules["streaming"] = package


def build(folder: Path) -> None:
    import_streaming_base()
    from streaming.base import MDSWriter

    for name in WEIGHTS:
        target = folder / "mds" / name
        if (target / "index.json").exists():
            continue
        packed = np.load(folder / "packed" / f"{name}.npy")
        columns = {"input_ids": f"ndarray:uint16:{packed.shape[1]}"}
        with MDSWriter(out=str(target), columns=columns, size_limit="64mb") as writer:
            for row in packed:
                writer.write({"input_ids": row})


def make_loader(folder: Path, args) -> DataLoader:
    from streaming.base import Stream, StreamingDataset

    streams = [Stream(local=str(folder / "mds" / n), proportion=w) for n, w in WEIGHTS.items()]
    needed = (1 + args.warmup + args.batches) * args.batch
    dataset = StreamingDataset(
        streams=streams, batch_size=args.batch, shuffle=False, epoch_size=needed
    )
    return DataLoader(dataset, batch_size=args.batch, num_workers=args.workers)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["build", "run"])
    add_run_options(parser)
    args = parser.parse_args()
    if args.mode == "build":
        build(args.data)
        return
    import_streaming_base()
    from streaming.base.util import clean_stale_shared_memory

    torch.set_num_threads(1)
    clean_stale_shared_memory()
    result = consume(
        lambda: make_loader(args.data, args),
        args.batches,
        args.warmup,
        args.batch,
        args.seq_len,
        args.hashes,
    )
    report(result)


if __name__ == "__main__":
    main()
