"""Scenes: what a synthetic image shows, drawn with Pillow and numpy.

A scene is a background (a two-colour gradient or a plain colour), a smooth random field
that gives every image its own large-scale light and dark areas (what a perceptual hash
sees, so different scenes hash far apart), groups of coloured shapes, optional grain and
an optional word. The caption is written from the scene, so it describes the image.

Example:
    >>> import random
    >>> scene = draw_scene(random.Random(1), 320, 240)
    >>> render(scene).size
    (320, 240)
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageDraw

from mixplane.synth.lexicon import between, pick

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (215, 40, 40),
    "green": (45, 165, 60),
    "blue": (40, 85, 215),
    "yellow": (240, 210, 45),
    "orange": (245, 140, 30),
    "purple": (135, 60, 170),
    "white": (245, 245, 245),
    "black": (25, 25, 25),
    "grey": (128, 128, 128),
    "pink": (240, 135, 180),
    "brown": (130, 80, 40),
}
SHAPES = ("circle", "square", "triangle", "ellipse", "star", "rectangle")
WORDS = ("SALE", "OPEN", "HELLO", "MIX", "DATA", "CAFE", "NORD", "SOL", "LUNA", "ZEN", "GO")
# Aspect ratios (width / height) of ordinary pictures, landscape and portrait.
ASPECTS = (1.0, 1.0, 4 / 3, 3 / 2, 16 / 9, 3 / 4, 2 / 3, 9 / 16, 5 / 4)
COLOUR_JITTER = 18


@dataclass(slots=True)
class Shape:
    kind: str
    colour: str
    box: tuple[int, int, int, int]
    angle: float


@dataclass(slots=True)
class Scene:
    """Everything `render` needs; the same scene always renders the same pixels."""

    width: int
    height: int
    background: tuple[str, ...]  # ("gradient", from, to) or ("plain", colour)
    angle: float
    field_seed: int
    field_grid: tuple[int, int]
    field_strength: float
    shapes: list[Shape] = field(default_factory=list)
    grain: float = 0.0
    word: str | None = None
    word_colour: str = "black"

    def groups(self) -> list[tuple[str, str, int]]:
        """`(shape, colour, count)` in the order first drawn, for the caption."""
        counts: dict[tuple[str, str], int] = {}
        for shape in self.shapes:
            counts[(shape.kind, shape.colour)] = counts.get((shape.kind, shape.colour), 0) + 1
        return [(kind, colour, n) for (kind, colour), n in counts.items()]


def picture_size(rng: random.Random) -> tuple[int, int]:
    """Mostly 160-480 px on the long side, sometimes up to 640, in common aspect ratios."""
    long_side = between(rng, 160, 480) if rng.random() < 0.85 else between(rng, 480, 640)
    aspect = pick(rng, ASPECTS)
    if aspect >= 1:
        return long_side, max(16, round(long_side / aspect))
    return max(16, round(long_side * aspect)), long_side


def draw_scene(rng: random.Random, width: int, height: int) -> Scene:
    """A random scene of `width` x `height` pixels."""
    names = list(COLOURS)
    if rng.random() < 0.7:
        first, second = rng.sample(names, 2)
        background: tuple[str, ...] = ("gradient", first, second)
    else:
        background = ("plain", pick(rng, names))
    scene = Scene(
        width=width,
        height=height,
        background=background,
        angle=rng.uniform(0, 2 * math.pi),
        field_seed=rng.getrandbits(32),
        field_grid=(between(rng, 3, 7), between(rng, 3, 7)),
        field_strength=rng.uniform(0.5, 0.85),
        grain=rng.uniform(4, 14) if rng.random() < 0.35 else 0.0,
    )
    for _ in range(between(rng, 1, 3)):
        kind = pick(rng, SHAPES)
        colour = pick(rng, [n for n in names if n not in background[1:]])
        for _ in range(1 if rng.random() < 0.55 else between(rng, 2, 3)):
            scene.shapes.append(Shape(kind, colour, _box(rng, kind, width, height), 0.0))
            scene.shapes[-1].angle = rng.uniform(0, 2 * math.pi)
    if rng.random() < 0.2:
        scene.word = pick(rng, WORDS)
        scene.word_colour = pick(rng, ("black", "white"))
    return scene


def _box(rng: random.Random, kind: str, width: int, height: int) -> tuple[int, int, int, int]:
    side = min(width, height)
    w = round(side * rng.uniform(0.12, 0.32))
    h = w
    if kind in ("ellipse", "rectangle"):
        h = round(w * pick(rng, (0.45, 0.55, 0.65)))
    x = between(rng, 0, max(0, width - w))
    y = between(rng, 0, max(0, height - h))
    return x, y, x + w, y + h


def render(scene: Scene) -> Image.Image:
    """The scene's pixels as an RGB image."""
    w, h = scene.width, scene.height
    rng = np.random.default_rng(scene.field_seed)
    xs = np.arange(w, dtype=np.float32) * np.float32(math.cos(scene.angle))
    ys = np.arange(h, dtype=np.float32) * np.float32(math.sin(scene.angle))
    along = ys[:, None] + xs[None, :]
    low = along.min()
    t = (along - low) / (float(along.max() - low) or 1.0)
    if scene.background[0] == "gradient":
        start, end = COLOURS[scene.background[1]], COLOURS[scene.background[2]]
    else:
        start = end = COLOURS[scene.background[1]]
    # A smooth random field of light and dark: upsampled coarse noise.
    gy, gx = scene.field_grid
    coarse = Image.fromarray(rng.integers(0, 256, (gy, gx), dtype=np.uint8), "L")
    smooth = np.asarray(coarse.resize((w, h), Image.Resampling.BICUBIC), np.float32)
    shade = (smooth - 128.0) * np.float32(scene.field_strength)
    # Channel by channel: 2-D arithmetic is several times faster than broadcasting to 3.
    channels = [
        shade + np.float32(a) + np.float32(b - a) * t for a, b in zip(start, end, strict=True)
    ]
    image = _merge(channels)
    draw = ImageDraw.Draw(image)
    jitter = random.Random(scene.field_seed)
    for shape in scene.shapes:
        _draw_shape(draw, shape, _jittered(COLOURS[shape.colour], jitter))
    if scene.word is not None:
        size = max(10, min(w, h) // 6)
        draw.text((w * 0.08, h * 0.08), scene.word, fill=COLOURS[scene.word_colour], font_size=size)
    if scene.grain:
        spread = round(scene.grain)
        grain = rng.integers(-spread, spread + 1, (h, w), dtype=np.int16)
        image = _merge([np.asarray(band, np.int16) + grain for band in image.split()])
    return image


def _merge(channels: list[np.ndarray]) -> Image.Image:
    """Three float or int planes, clipped to bytes, as one RGB image."""
    bands = [Image.fromarray(np.clip(c, 0, 255).astype(np.uint8), "L") for c in channels]
    return Image.merge("RGB", bands)


def _jittered(colour: tuple[int, int, int], rng: random.Random) -> tuple[int, int, int]:
    r, g, b = (min(255, max(0, c + rng.randint(-COLOUR_JITTER, COLOUR_JITTER))) for c in colour)
    return r, g, b


def _draw_shape(draw: ImageDraw.ImageDraw, shape: Shape, fill: tuple[int, int, int]) -> None:
    x0, y0, x1, y1 = shape.box
    cx, cy, rx, ry = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2, (y1 - y0) / 2
    if shape.kind == "circle":
        draw.ellipse((x0, y0, x0 + 2 * rx, y0 + 2 * rx), fill=fill)
    elif shape.kind == "ellipse":
        draw.ellipse(shape.box, fill=fill)
    elif shape.kind in ("square", "rectangle"):
        corners = [(-rx, -ry), (rx, -ry), (rx, ry), (-rx, ry)]
        draw.polygon(_turned(corners, cx, cy, shape.angle * 0.15), fill=fill)
    elif shape.kind == "triangle":
        points = [(rx * math.cos(a), rx * math.sin(a)) for a in _angles(3, shape.angle)]
        draw.polygon(_turned(points, cx, cy, 0.0), fill=fill)
    else:  # star: ten points alternating between the outer and the inner radius
        angles = _angles(10, shape.angle)
        radii = [rx if i % 2 == 0 else rx * 0.45 for i in range(len(angles))]
        points = [(r * math.cos(a), r * math.sin(a)) for r, a in zip(radii, angles, strict=True)]
        draw.polygon(_turned(points, cx, cy, 0.0), fill=fill)


def _angles(count: int, start: float) -> list[float]:
    return [start + 2 * math.pi * i / count for i in range(count)]


def _turned(
    points: list[tuple[float, float]], cx: float, cy: float, angle: float
) -> list[tuple[float, float]]:
    cos, sin = math.cos(angle), math.sin(angle)
    return [(cx + x * cos - y * sin, cy + x * sin + y * cos) for x, y in points]
