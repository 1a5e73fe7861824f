"""MosaicML streaming over remote MDS shards, run with its own environment's python.

    python mosaic_remote_runner.py build DATA_FOLDER --shard-bytes N
    python mosaic_remote_runner.py run CACHE_FOLDER --remote s3://bench/mds --cache-limit N \
        --shuffle-block N --workers W --batch B --batches N --warmup K

`build` writes one MDS dataset per component (DATA_FOLDER/mds/NAME, shards of N bytes) from
the packed sequences in DATA_FOLDER/packed/NAME.npy; `run` blends the remote ones with three
`Stream`s in the mixture's proportions, shuffled, with local copies under CACHE_FOLDER and
at most --cache-limit bytes of them, and feeds the fixed consumer. boto3 finds the server and
credentials in the environment (S3_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).
Prints one `RESULT {json}` line, with the wall-clock end of the steady window.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parent))

from consume import add_run_options, consume, report  # noqa: E402
from mosaic_runner import WEIGHTS, import_streaming_base  # noqa: E402


def build(folder: Path, shard_bytes: int) -> None:
    import_streaming_base()
    from streaming.base import MDSWriter

    for name in WEIGHTS:
        target = folder / "mds" / name
        if (target / "index.json").exists():
            continue
        packed = np.load(folder / "packed" / f"{name}.npy", mmap_mode="r")
        columns = {"input_ids": f"ndarray:uint16:{packed.shape[1]}"}
        with MDSWriter(out=str(target), columns=columns, size_limit=shard_bytes) as writer:
            for row in packed:
                writer.write({"input_ids": np.asarray(row)})


def make_loader(args) -> DataLoader:
    from streaming.base import Stream, StreamingDataset

    streams = [
        Stream(remote=f"{args.remote}/{name}", local=str(args.data / name), proportion=weight)
        for name, weight in WEIGHTS.items()
    ]
    dataset = StreamingDataset(
        streams=streams,
        batch_size=args.batch,
        shuffle=True,
        shuffle_block_size=args.shuffle_block,
        cache_limit=args.cache_limit,
    )
    return DataLoader(dataset, batch_size=args.batch, num_workers=args.workers)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["build", "run"])
    add_run_options(parser)
    parser.add_argument("--shard-bytes", type=int, default=32_000_000)
    parser.add_argument("--remote", default="s3://bench/mds")
    parser.add_argument("--cache-limit", type=int)
    parser.add_argument("--shuffle-block", type=int)
    args = parser.parse_args()
    if args.mode == "build":
        build(args.data, args.shard_bytes)
        return
    import_streaming_base()
    from streaming.base.util import clean_stale_shared_memory

    torch.set_num_threads(1)
    clean_stale_shared_memory()
    result = consume(lambda: make_loader(args), args.batches, args.warmup, args.batch, args.seq_len)
    result["steady_end"] = time.time()
    result["steady_seconds"] = args.batches * args.batch / result["samples_per_second"]
    report(result)


if __name__ == "__main__":
    main()
