"""Synthetic image-text datasets: real image shards and manifests with generated JPEGs.

For loader tests and benchmarks. Shards are written by the store's `ImageShardWriter` and
the manifest has the fields a processing run with `output_format: webdataset` writes, so the
catalog registers these folders like any other. Each image is a colored scene (a gradient
sky, a ground band, a few shapes and some noise, so JPEG sizes and decode costs are those of
photos rather than of flat images) and its caption names its main color and shape, so a
small model can learn to match them.

Example:
    >>> write_image_dataset("/tmp/photos", samples=200, seed=1)  # doctest: +SKIP
    >>> write_image_catalog("/tmp/work", {"photos": {"samples": 200}})  # doctest: +SKIP
    '/tmp/work/catalog.duckdb'
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from mixplane.document import Document
from mixplane.manifest import write_manifest
from mixplane.store.images import ImageShardWriter

COLORS = {
    "red": (200, 40, 40),
    "green": (40, 170, 60),
    "blue": (40, 70, 200),
    "yellow": (220, 200, 40),
    "purple": (130, 50, 160),
    "orange": (230, 120, 30),
}
SHAPES = ("circle", "square", "triangle")
LANGUAGES = ("en", "de")


def scene(rng: np.random.Generator, width: int, height: int) -> tuple[Image.Image, str, str]:
    """A generated picture, its main color name and its shape name."""
    color_name = list(COLORS)[int(rng.integers(len(COLORS)))]
    shape = SHAPES[int(rng.integers(len(SHAPES)))]
    top = rng.integers(60, 200, 3)
    bottom = rng.integers(20, 120, 3)
    ramp = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None, None]
    pixels = top * (1 - ramp) + bottom * ramp
    pixels = np.broadcast_to(pixels, (height, width, 3)).copy()
    pixels += rng.normal(0.0, 12.0, (height, width, 3)).astype(np.float32)
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    ground = int(height * rng.uniform(0.6, 0.85))
    draw.rectangle((0, ground, width, height), fill=tuple(int(v) for v in rng.integers(0, 90, 3)))
    for _ in range(int(rng.integers(2, 6))):  # small distractors
        x, y = int(rng.integers(width)), int(rng.integers(height))
        r = int(rng.integers(4, max(5, min(width, height) // 12)))
        draw.ellipse(
            (x - r, y - r, x + r, y + r), fill=tuple(int(v) for v in rng.integers(0, 255, 3))
        )
    side = min(width, height) * rng.uniform(0.3, 0.55)
    cx, cy = width * rng.uniform(0.35, 0.65), height * rng.uniform(0.35, 0.65)
    box = (cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2)
    fill = COLORS[color_name]
    if shape == "circle":
        draw.ellipse(box, fill=fill)
    elif shape == "square":
        draw.rectangle(box, fill=fill)
    else:
        draw.polygon([(box[0], box[3]), (box[2], box[3]), (cx, box[1])], fill=fill)
    return image, color_name, shape


def write_image_dataset(
    folder: str,
    samples: int,
    seed: int = 0,
    source: str = "synthetic",
    shards: int = 2,
    size: tuple[int, int] = (64, 96),
    quality: int = 90,
) -> str:
    """Write `samples` JPEG-caption samples over `shards` image shards; returns the manifest
    URL. Image sides are uniform in `size` (inclusive). Properties: `source`, `language` (en
    and de in turn), `color`, `shape`, and the writer's `width`, `height`, `image_format`."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    outputs: list[dict[str, Any]] = []
    per_shard = -(-samples // shards)
    written = 0
    for task in range(shards):
        writer = ImageShardWriter(folder, f"part-{task:05d}")
        for _ in range(min(per_shard, samples - written)):
            width, height = (int(v) for v in rng.integers(size[0], size[1] + 1, 2))
            image, color, shape = scene(rng, width, height)
            encoded = io.BytesIO()
            image.save(encoded, "JPEG", quality=quality)
            caption = f"a {color} {shape} in a {source} picture"
            metadata = {"language": LANGUAGES[written % 2], "color": color, "shape": shape}
            doc_id = f"{source}-{written:07d}"
            writer.write(Document(doc_id, caption, source, metadata, {"jpg": encoded.getvalue()}))
            written += 1
        outputs.extend(writer.close())
    config = {"output_format": "webdataset", "synthetic": {"seed": seed, "samples": samples}}
    return write_manifest(folder, {"kind": "process", "config": config, "outputs": outputs})


def write_image_catalog(folder: str, datasets: dict[str, dict[str, Any]]) -> str:
    """Write each dataset (`write_image_dataset` options, `source` defaulting to its name)
    under `folder/NAME` and register it in `folder/catalog.duckdb`; returns the catalog path.
    """
    return write_catalog(folder, datasets, write_image_dataset)


def write_catalog(
    folder: str, datasets: dict[str, dict[str, Any]], write: Callable[..., str]
) -> str:
    """Write each dataset with `write(target, source=NAME, **options)` under `folder/NAME`
    and register it in `folder/catalog.duckdb`; returns the catalog path."""
    from mixplane.catalog import Catalog

    path = os.path.join(folder, "catalog.duckdb")
    catalog = Catalog(path)
    for name, options in datasets.items():
        target = os.path.join(folder, name)
        write(target, **({"source": name} | options))
        catalog.register(target, name)
    return path


def caption_tokenizer(sources: tuple[str, ...] = ("synthetic",), vocab_size: int = 120):
    """A small BPE `tokenizers.Tokenizer` trained here on the generator's captions (nothing
    is downloaded); id 0 is `[PAD]`."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[PAD]", "[UNK]"])
    captions = [f"a {c} {s} in a {src} picture" for c in COLORS for s in SHAPES for src in sources]
    tokenizer.train_from_iterator(captions, trainer=trainer)
    return tokenizer
