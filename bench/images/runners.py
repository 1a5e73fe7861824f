"""One measured run of one image loader: read, decode, resize to 224, normalize into batches.

    python bench/images/runners.py mixplane|webdataset|webdataset-draft FOLDER --workers N
        --batch B --augment center|rrc

All tools read the same image shards (FOLDER/part-*.tar) and tokenize captions with the
same BPE to 77 ids. The clock and the CPU count start after `--warmup` batches (workers
started, first reads done) and stop after `--batches` more; CPU time is that of this process
and its DataLoader workers over the same window. Prints one JSON line.

- `mixplane`: `ImageTextDataset` over the catalog's mixture (FOLDER/mixture.yaml) through
  `image_text_loader`. With `--augment center` its built-in preprocessing: JPEGs decoded at
  reduced size, one resize with crop, numpy normalize. With `--augment rrc` the torchvision
  transform below as its `transform=` (a transform takes the full decode).
- `webdataset`: OpenCLIP's pipeline without the model: `wds.WebDataset(urls).decode("pil")
  .to_tuple("jpg;png", "txt").map_tuple(preprocess, tokenize)`, batched by a torch
  DataLoader. preprocess is Resize(224, bicubic) + CenterCrop(224) + ToTensor +
  Normalize(CLIP mean/std) with `--augment center`, RandomResizedCrop(224, bicubic) +
  ToTensor + Normalize with `--augment rrc`.
- `webdataset-draft`: the same with the reduced decode mixplane uses, as a webdataset
  decoder handler: a JPEG whose shorter side is at least twice 224 is opened with Pillow's
  `Image.draft("RGB", (224, 224))` (libjpeg's DCT scaling by 1/2, 1/4 or 1/8, never below
  224), so both sides decode the same pixels.
"""

from __future__ import annotations

import argparse
import glob
import io
import json
import os
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))  # torchvision_cpu

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


def peer_transform(augment: str):
    """The torchvision preprocessing of the peer (and of mixplane with `rrc`)."""
    from torchvision_cpu import import_torchvision

    transforms = import_torchvision().transforms
    bicubic = transforms.InterpolationMode.BICUBIC
    if augment == "rrc":
        crop = [transforms.RandomResizedCrop(SIZE, interpolation=bicubic)]
    else:
        crop = [transforms.Resize(SIZE, interpolation=bicubic), transforms.CenterCrop(SIZE)]
    return transforms.Compose([*crop, transforms.ToTensor(), transforms.Normalize(MEAN, STD)])


def draft_decode(key: str, data: bytes):
    """A webdataset decoder handler: images as RGB PIL images, JPEGs at least twice the
    target decoded at reduced size (mixplane's rule, `DRAFT_FACTOR` = 2)."""
    from PIL import Image

    if key.rsplit(".", 1)[-1].lower() not in ("jpg", "jpeg", "png"):
        return None
    image = Image.open(io.BytesIO(data))
    if image.format == "JPEG" and min(image.size) >= 2 * SIZE:
        image.draft("RGB", (SIZE, SIZE))
    return image.convert("RGB")


def mixplane_loader(folder: str, workers: int, batch: int, augment: str):
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
        transform=peer_transform(augment) if augment == "rrc" else None,
    )
    return image_text_loader(dataset, num_workers=workers), "images"


def webdataset_loader(folder: str, workers: int, batch: int, augment: str, draft: bool):
    import torch
    import webdataset as wds
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    preprocess = peer_transform(augment)

    def tokenize(text: str) -> torch.Tensor:
        ids = tokenizer.encode(text).ids[:CONTEXT]
        out = torch.zeros(CONTEXT, dtype=torch.long)
        out[: len(ids)] = torch.tensor(ids, dtype=torch.long)
        return out

    urls = sorted(glob.glob(os.path.join(folder, "images", "part-*.tar")))
    dataset = (
        wds.WebDataset(urls, shardshuffle=False, nodesplitter=None, empty_check=False)
        .decode(draft_decode if draft else "pil")
        .to_tuple("jpg;png", "txt")
        .map_tuple(preprocess, tokenize)
    )
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch, num_workers=workers)
    return loader, 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tool", choices=["mixplane", "webdataset", "webdataset-draft"])
    parser.add_argument("folder")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--augment", choices=["center", "rrc"], default="center")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)  # one core per process, as in a loader worker
    started = time.perf_counter()
    if args.tool == "mixplane":
        loader, images_key = mixplane_loader(args.folder, args.workers, args.batch, args.augment)
    else:
        draft = args.tool == "webdataset-draft"
        made = webdataset_loader(args.folder, args.workers, args.batch, args.augment, draft)
        loader, images_key = made
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
        "augment": args.augment,
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
