"""One measured run of one tool in mixplane's own environment (run as a subprocess).

    python bench/loader/runners.py TOOL DATA_FOLDER --workers W --batch B --batches N

Tools: `memmap` (the packed sequences read straight from np.memmap, the limit: with 0
workers iterated in this process without the DataLoader's loop, as `torch_loader` does; with
workers its batches travel as mixplane's do), `mixplane`
(MixtureDataset over the catalog, document_ids included), `mixplane-ids` (input_ids only),
`hf` (Hugging Face datasets `interleave_datasets` over three Arrow datasets of the same
packed sequences, with the same proportions). Each prints one `RESULT {json}` line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

sys.path.insert(0, str(Path(__file__).resolve().parent))

from consume import add_run_options, consume, report  # noqa: E402
from data import WEIGHTS  # noqa: E402

from mixplane.load.torch.adapter import as_is, as_tensors  # noqa: E402
from mixplane.load.torch.transfer import WorkerBatch, group_size, split_group  # noqa: E402


class MemmapBatches(IterableDataset):
    """Contiguous batches of the packed sequences; workers take groups of `per_message`
    batches in turn and send them as mixplane's workers send theirs (`WorkerBatch`, as many
    batches a message as `torch_loader` would put together), so the transfer costs the same."""

    def __init__(self, path: str, batch: int, per_message: int = 1):
        self.path, self.batch, self.per_message = path, batch, per_message

    def __iter__(self):
        packed = np.load(self.path, mmap_mode="r")
        info = get_worker_info()
        workers, worker = (info.num_workers, info.id) if info else (1, 0)
        rows = self.batch * (self.per_message if info else 1)
        count = len(packed) // self.batch * self.batch
        for start in range(worker * rows, count, workers * rows):
            batch = {"input_ids": np.array(packed[start : min(start + rows, count)])}
            yield WorkerBatch(batch) if info else as_tensors(batch)


def memmap_loader(folder: Path, args) -> Iterable:
    """The same path as `torch_loader`'s: with 0 workers the batches straight from the
    dataset, with workers a DataLoader that leaves them as they arrive, in messages of as
    many batches as `torch_loader` would send (split again here)."""
    path = str(folder / "packed" / "all.npy")
    if args.workers == 0:
        return MemmapBatches(path, args.batch)
    per_message = group_size(args.batch * args.seq_len * np.dtype(np.uint16).itemsize)
    loader = DataLoader(
        MemmapBatches(path, args.batch, per_message),
        batch_size=None,
        num_workers=args.workers,
        collate_fn=as_is,
        prefetch_factor=-(-2 // per_message),
    )
    return (batch for group in loader for batch in split_group(group, args.batch))


def mixplane_loader(folder: Path, args, boundaries: str) -> DataLoader:
    from mixplane.load import MixtureDataset
    from mixplane.load.torch import torch_loader

    dataset = MixtureDataset(folder / "mixture.yaml", dtype="uint16", boundaries=boundaries)
    return torch_loader(dataset, args.batch, num_workers=args.workers)


def hf_build(folder: Path) -> None:
    """Three Arrow datasets (one per component) of the packed sequences, saved once."""
    import datasets
    import pyarrow as pa

    for name in WEIGHTS:
        target = folder / "hf" / name
        if target.exists():
            continue
        packed = np.load(folder / "packed" / f"{name}.npy")
        column = pa.FixedSizeListArray.from_arrays(pa.array(packed.ravel()), packed.shape[1])
        datasets.Dataset(pa.table({"input_ids": column})).save_to_disk(str(target))


def hf_loader(folder: Path, args) -> DataLoader:
    import datasets

    parts = [datasets.load_from_disk(str(folder / "hf" / name)) for name in WEIGHTS]
    mixed = datasets.interleave_datasets(
        parts, probabilities=list(WEIGHTS.values()), seed=0, stopping_strategy="first_exhausted"
    ).with_format("numpy")
    return DataLoader(mixed, batch_size=args.batch, num_workers=args.workers)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tool", choices=["memmap", "mixplane", "mixplane-ids", "hf", "hf-build"])
    add_run_options(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    # Libraries load before the clock starts: time to first batch counts the tools' work only.
    if args.tool.startswith("mixplane"):
        import mixplane.catalog  # noqa: F401
        import mixplane.load.torch.adapter  # noqa: F401
    if args.tool.startswith("hf"):
        import datasets  # noqa: F401
    if args.tool == "hf-build":
        hf_build(args.data)
        return
    makers = {
        "memmap": lambda: memmap_loader(args.data, args),
        "mixplane": lambda: mixplane_loader(args.data, args, "document_ids"),
        "mixplane-ids": lambda: mixplane_loader(args.data, args, "none"),
        "hf": lambda: hf_loader(args.data, args),
    }
    result = consume(
        makers[args.tool], args.batches, args.warmup, args.batch, args.seq_len, args.hashes
    )
    report(result)


if __name__ == "__main__":
    main()
