"""One measured run of one image loader: read, decode, resize to 224, normalize into batches.

    python bench/images/runners.py mixplane|webdataset FOLDER --workers N --batch B

Both tools read the same image shards (FOLDER/part-*.tar) and tokenize captions with the
same BPE to 77 ids. The clock and the CPU count start after `--warmup` batches (workers
started, first reads done) and stop after `--batches` more; CPU time is that of this process
and its DataLoader workers over the same window. Prints one JSON line.

- `mixplane`: `ImageTextDataset` over the catalog's mixture (FOLDER/mixture.yaml) through
  `image_text_loader`: JPEGs decoded at reduced size, one resize with crop, numpy normalize.
- `webdataset`: OpenCLIP's pipeline without the model: `wds.WebDataset(urls).decode("pil")
  .to_tuple("jpg;png", "txt").map_tuple(preprocess, tokenize)` with preprocess = Resize(224,
  bicubic) + CenterCrop(224) + ToTensor + Normalize(CLIP mean/std), batched by a torch
  DataLoader.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # torchvision_cpu

SIZE = 224
CONTEXT = 77
MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)


def tree_cpu() -> float:
    """CPU seconds of this process and its children (DataLoader workers) so far."""
    me = psutil.Process()
    total = 0.0
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def mixplane_loader(folder: str, workers: int, batch: int):
    from tokenizers import Tokenizer

    from mixplane.load.images import ImageTextDataset
    from mixplane.load.images.torch import image_text_loader

    tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    dataset = ImageTextDataset(
        os.path.join(folder, "mixture.yaml"),
        batch_size=batch,
        tokenizer=tokenizer,
        image_size=SIZE,
        context_length=CONTEXT,
    )
    return image_text_loader(dataset, num_workers=workers), "images"


def webdataset_loader(folder: str, workers: int, batch: int):
    import torch
    import webdataset as wds
    from tokenizers import Tokenizer
    from torchvision_cpu import import_torchvision

    transforms = import_torchvision().transforms
    tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    preprocess = transforms.Compose(
        [
            transforms.Resize(SIZE, interpolation=transforms.InterpolationMode.BICUBIC),
            transforms.CenterCrop(SIZE),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ]
    )

    def tokenize(text: str) -> torch.Tensor:
        ids = tokenizer.encode(text).ids[:CONTEXT]
        out = torch.zeros(CONTEXT, dtype=torch.long)
        out[: len(ids)] = torch.tensor(ids, dtype=torch.long)
        return out

    urls = sorted(glob.glob(os.path.join(folder, "images", "part-*.tar")))
    dataset = (
        wds.WebDataset(urls, shardshuffle=False, nodesplitter=None, empty_check=False)
        .decode("pil")
        .to_tuple("jpg;png", "txt")
        .map_tuple(preprocess, tokenize)
    )
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch, num_workers=workers)
    return loader, 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tool", choices=["mixplane", "webdataset"])
    parser.add_argument("folder")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)  # one core per process, as in a loader worker
    started = time.perf_counter()
    make = mixplane_loader if args.tool == "mixplane" else webdataset_loader
    loader, images_key = make(args.folder, args.workers, args.batch)
    stream = iter(loader)
    first = next(stream)
    first_batch = time.perf_counter() - started
    for _ in range(args.warmup - 1):
        next(stream)
    cpu, clock = tree_cpu(), time.perf_counter()
    images = 0
    for _ in range(args.batches):
        batch = next(stream)
        images += len(batch[images_key])
    seconds = time.perf_counter() - clock
    cpu = tree_cpu() - cpu
    shape = list(first[images_key].shape)
    result = {
        "tool": args.tool,
        "workers": args.workers,
        "images": images,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "images_per_s": images / seconds,
        "images_per_core_s": images / cpu,
        "first_batch_s": first_batch,
        "batch_shape": shape,
    }
    print(json.dumps(result))
    os._exit(0)  # do not wait for the workers' orderly shutdown: nothing is measured there


if __name__ == "__main__":
    main()
