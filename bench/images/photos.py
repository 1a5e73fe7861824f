"""Image shards of real photographs, for the image loader benchmark.

The photographs come from two Debian packages, fetched with `apt-get download` (no install)
and unpacked with `dpkg-deb -x` under bench/data/photos/: `mate-backgrounds` (its nature
photographs: water, flowers, insects, dunes, wood, rain) and `opencv-doc` (the photographs
of its examples: street scenes, shop signs, buildings, fruit, faces, stereo pairs...). Kept:
RGB JPEGs whose shorter side is at least 256 px, minus the abstract paintings and desktop
graphics of mate-backgrounds and the 3D renders of opencv-doc; 51 photographs. None of them
was used while mixplane's image loading was written or tuned.

Each sample is a random crop of one of them (half to all of its area, aspect ratio 3:4 to
4:3) scaled with Lanczos to a shorter side uniform in `size` (never enlarged) and encoded as
JPEG at quality 90, so the sizes match the generated scenes of the synthetic set (300-800 px)
and only the content differs. Captions name the photograph; languages alternate en/de.

Example:
    photos = gather_photos()                       # [Path, ...] of the 51 photographs
    write_photo_dataset("bench/data/images/photos-3000/images", photos, 3000, shards=4)
"""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import numpy as np
from PIL import Image

from mixplane.document import Document
from mixplane.manifest import write_manifest
from mixplane.store.images import ImageShardWriter

ROOT = Path(__file__).resolve().parents[2] / "bench" / "data" / "photos"
PACKAGES = ("mate-backgrounds", "opencv-doc")
# Pictures in those packages that are not photographs.
NOT_PHOTOGRAPHS = ("backgrounds/mate/abstract/", "backgrounds/mate/desktop/", "Blender_")


def gather_photos(root: Path = ROOT) -> list[Path]:
    """The photographs (downloading and unpacking the packages once), sorted by path."""
    unpacked = root / "unpacked"
    if not (root / "unpacked.done").exists():
        debs = root / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        if not all(list(debs.glob(f"{name}_*.deb")) for name in PACKAGES):
            subprocess.run(["apt-get", "download", "-q", *PACKAGES], cwd=debs, check=True)
        for deb in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
        (root / "unpacked.done").write_text("")
    photos = []
    for path in sorted(unpacked.rglob("*")):
        name = path.as_posix()
        if path.suffix.lower() not in (".jpg", ".jpeg") or "/html/" in name:
            continue
        if any(part in name for part in NOT_PHOTOGRAPHS):
            continue
        with Image.open(path) as image:
            if image.mode == "RGB" and min(image.size) >= 256:
                photos.append(path)
    if not photos:
        raise SystemExit(f"no photographs found under {unpacked}")
    return photos


def sample_of(photo: Image.Image, rng: np.random.Generator, size: tuple[int, int]) -> bytes:
    """A random crop of `photo`, scaled to a shorter side drawn in `size`, as JPEG bytes."""
    width, height = photo.size
    area = width * height * rng.uniform(0.5, 1.0)
    ratio = float(np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3))))
    crop_w = min(width, round((area * ratio) ** 0.5))
    crop_h = min(height, round((area / ratio) ** 0.5))
    left = int(rng.integers(0, width - crop_w + 1))
    top = int(rng.integers(0, height - crop_h + 1))
    crop = photo.crop((left, top, left + crop_w, top + crop_h))
    shorter = min(int(rng.integers(size[0], size[1] + 1)), crop_w, crop_h)
    scale = shorter / min(crop_w, crop_h)
    target = (max(1, round(crop_w * scale)), max(1, round(crop_h * scale)))
    encoded = io.BytesIO()
    crop.resize(target, Image.Resampling.LANCZOS).save(encoded, "JPEG", quality=90)
    return encoded.getvalue()


def write_photo_dataset(
    folder: str,
    photos: list[Path],
    samples: int,
    seed: int = 1,
    shards: int = 4,
    size: tuple[int, int] = (300, 800),
) -> list[str]:
    """Write `samples` photo-caption samples over `shards` image shards with a manifest, as
    `mixplane process` would; returns the captions' distinct texts (to train a tokenizer)."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    order = rng.permutation(len(photos))
    opened: dict[int, Image.Image] = {}
    outputs: list[dict] = []
    captions: set[str] = set()
    per_shard = -(-samples // shards)
    written = 0
    for task in range(shards):
        writer = ImageShardWriter(folder, f"part-{task:05d}")
        for _ in range(min(per_shard, samples - written)):
            number = int(order[written % len(photos)])
            if number not in opened:
                opened[number] = Image.open(photos[number]).convert("RGB")
            name = photos[number].stem.replace("_", " ").lower()
            caption = f"a photograph named {name}"
            language = ("en", "de")[written % 2]
            data = sample_of(opened[number], rng, size)
            document = Document(
                f"photo-{written:07d}", caption, "bench", {"language": language}, {"jpg": data}
            )
            writer.write(document)
            captions.add(caption)
            written += 1
        outputs.extend(writer.close())
    config = {"output_format": "webdataset", "photos": {"seed": seed, "samples": samples}}
    write_manifest(folder, {"kind": "process", "config": config, "outputs": outputs})
    return sorted(captions)


def photo_tokenizer(captions: list[str], vocab_size: int = 200):
    """A small BPE trained on the captions (id 0 is `[PAD]`), as the synthetic set has."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[PAD]", "[UNK]"])
    tokenizer.train_from_iterator(captions, trainer=trainer)
    return tokenizer
