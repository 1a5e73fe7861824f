"""What each image loader outputs, compared pixel by pixel (outside every clock).

For `samples` images of the benchmark's shards, the 224 x 224 output of:

- `mixplane`: `ImagePreprocess` (the built-in path: reduced decode, one resize with crop);
- `mixplane-full`: the same resize after a full decode (what the reduced decode changes);
- `webdataset`: full decode, then Resize(224, bicubic) + CenterCrop(224);
- `webdataset-draft`: the same after the reduced decode (runners.draft_decode);
- `reference`: full decode, the center square resized to 224 with Lanczos in one step,
  the best a loader could hand over;

each turned back to 8-bit levels (before normalization), then compared in pairs (the mean
absolute difference in levels and the PSNR in dB over the whole set): the reduced decode
against the full one on each side, each output against the peer's usual output
(`webdataset`) and against the reference; and how many images the reduced decode applied
to. With RandomResizedCrop both loaders run the same torchvision transform on the same full
decode; `same_rrc_pixels` checks that, for every image, mixplane's `transform=` path and
webdataset's `decode("pil")` give the same tensor from the same seed.

    python bench/images/quality.py bench/data/images/3000 --samples 300
    python bench/images/quality.py bench/data/images/3000 --into bench/results/images-3000.json
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
import tarfile
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from runners import MEAN, SIZE, STD, draft_decode, peer_transform  # noqa: E402

COMPARED = [
    ("mixplane", "mixplane-full"),
    ("mixplane-full", "webdataset"),
    ("mixplane", "webdataset"),
    ("webdataset-draft", "webdataset"),
    ("mixplane", "webdataset-draft"),
    ("mixplane", "reference"),
    ("webdataset", "reference"),
    ("webdataset-draft", "reference"),
]


def jpegs(folder: Path, samples: int) -> list[bytes]:
    """The first `samples` JPEGs of the shards, spread over them in turn."""
    per_shard: list[list[bytes]] = []
    tars = sorted((folder / "images").glob("part-*.tar"))
    for path in tars:
        found: list[bytes] = []
        with tarfile.open(path) as tar:
            for member in tar:
                if member.name.endswith(".jpg"):
                    found.append(tar.extractfile(member).read())
                    if len(found) * len(tars) >= samples:
                        break
        per_shard.append(found)
    mixed = [data for group in zip(*per_shard, strict=False) for data in group]
    return mixed[:samples]


def levels(normalized: np.ndarray) -> np.ndarray:
    """A normalized (3, H, W) array back to 8-bit levels, as float64."""
    mean = np.asarray(MEAN)[:, None, None]
    std = np.asarray(STD)[:, None, None]
    return (np.asarray(normalized, dtype=np.float64) * std + mean) * 255.0


def outputs(data: bytes, center, preprocess) -> dict[str, np.ndarray]:
    from PIL import Image

    full = Image.open(io.BytesIO(data)).convert("RGB")
    width, height = full.size
    side = min(width, height)
    box = ((width - side) / 2, (height - side) / 2, (width + side) / 2, (height + side) / 2)
    reference = full.resize((SIZE, SIZE), Image.Resampling.LANCZOS, box=box)
    return {
        "mixplane": levels(preprocess(data, "quality")),
        "mixplane-full": levels(preprocess.normalize(preprocess.resize(full))),
        "webdataset": levels(center(full).numpy()),
        "webdataset-draft": levels(center(draft_decode("jpg", data)).numpy()),
        "reference": np.asarray(reference, dtype=np.float64).transpose(2, 0, 1),
    }


def same_rrc_pixels(images: list[bytes]) -> bool:
    """mixplane's transform path and webdataset's decode give the same RandomResizedCrop
    tensor for every image, from the same torch seed."""
    import torch
    import webdataset as wds

    from mixplane.load.images.batch import ImagePreprocess

    rrc = peer_transform("rrc")
    mine = ImagePreprocess(SIZE, transform=rrc)
    theirs = wds.autodecode.imagehandler("pil")
    for number, data in enumerate(images):
        torch.manual_seed(number)
        left = mine(data, "quality")
        torch.manual_seed(number)
        right = rrc(theirs("jpg", data)).numpy()
        if not np.array_equal(left, right):
            return False
    return True


def compare(folder: Path, samples: int) -> dict:
    """The comparison figures over the first `samples` images of `folder`'s shards."""
    from PIL import Image

    from mixplane.load.images.batch import ImagePreprocess

    images = jpegs(folder, samples)
    center, preprocess = peer_transform("center"), ImagePreprocess(SIZE)
    absolute = dict.fromkeys(COMPARED, 0.0)
    squared = dict.fromkeys(absolute, 0.0)
    reduced = 0
    for data in images:
        found = outputs(data, center, preprocess)
        with Image.open(io.BytesIO(data)) as opened:
            reduced += min(opened.size) >= 2 * SIZE
        for a, b in absolute:
            difference = found[a] - found[b]
            absolute[(a, b)] += float(np.abs(difference).mean())
            squared[(a, b)] += float((difference**2).mean())
    count = len(images)
    pairs = {}
    for (a, b), total in absolute.items():
        mse = squared[(a, b)] / count
        pairs[f"{a} vs {b}"] = {
            "mean_abs_levels": round(total / count, 3),
            "psnr_db": round(10 * math.log10(255.0**2 / mse), 2) if mse else math.inf,
        }
    return {
        "images": count,
        "reduced_decode": reduced,
        "pairs": pairs,
        "same_rrc_pixels": same_rrc_pixels(images),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--into", help="a results file of run.py whose `quality` to replace")
    args = parser.parse_args()
    found = compare(Path(args.folder), args.samples)
    print(json.dumps(found, indent=2))
    if args.into:
        report = json.loads(Path(args.into).read_text())
        report["quality"] = found
        Path(args.into).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
