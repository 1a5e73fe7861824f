"""Image stages on real (tiny, generated) images: every exclusion reason, EXIF orientation,
resize modes, byte-identical re-encoding, the perceptual hash's robustness, caption limits."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw, ImageEnhance, ImageFile

from mixplane.document import Document, Drop
from mixplane.errors import ConfigError
from mixplane.media import IMAGE_EXTENSIONS, image_of, set_image
from mixplane.stages.build import build_stage
from mixplane.stages.image.caption import CaptionFilter
from mixplane.stages.image.decode import DecodeImage
from mixplane.stages.image.phash import hamming, phash
from mixplane.stages.image.resize import ResizeImage
from mixplane.stages.image.similarity import ClipScore


def natural(seed: int, size: tuple[int, int] = (96, 72)) -> Image.Image:
    """Gradients, a few filled shapes and noise: enough structure for a perceptual hash."""
    rng = np.random.default_rng(seed)
    w, h = size
    y, x = np.mgrid[0:h, 0:w] / max(w, h)
    channels = []
    for _ in range(3):
        a, b, phase = rng.uniform(-1, 1, 3)
        wave = np.sin(2 * np.pi * (a * x + b * y) * rng.uniform(0.5, 2) + phase * 3)
        channels.append(128 + 60 * wave + rng.uniform(-40, 40))
    image = Image.fromarray(np.clip(np.stack(channels, -1), 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(3, 8))):
        x0, y0 = int(rng.integers(0, w)), int(rng.integers(0, h))
        box = (x0, y0, x0 + int(rng.integers(8, w // 2)), y0 + int(rng.integers(8, h // 2)))
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=colour)
    noisy = np.asarray(image).astype(float) + rng.normal(0, 6, (h, w, 3))
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))


def encoded(image: Image.Image, fmt: str = "JPEG", **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def doc_with(data: bytes, ext: str = "jpg", text: str = "a photo of a thing") -> Document:
    return Document("s/0", text, "web", media={ext: data, "txt": text.encode()})


def drop_reason(result) -> str:
    assert isinstance(result, Drop), result
    return result.reason


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims `width` x `height` RGB pixels, with one tiny IDAT."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 16)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


# media helpers


def test_image_of_prefers_the_first_image_extension_and_set_image_replaces_it():
    doc = Document("a", "", "s", media={"png": b"p", "jpg": b"j", "json": b"{}"})
    assert image_of(doc) == ("jpg", b"j")
    set_image(doc, "webp", b"w")
    assert doc.media == {"json": b"{}", "webp": b"w"}
    assert image_of(Document("b", "", "s")) is None
    assert IMAGE_EXTENSIONS[0] == "jpg"


# decode_image


def test_decode_describes_a_good_image_and_adds_its_phash():
    image = natural(1)
    data = encoded(image, quality=90)
    doc = DecodeImage().apply(doc_with(data))
    assert isinstance(doc, Document)
    meta = doc.metadata
    assert (meta["width"], meta["height"]) == (96, 72)
    assert (meta["original_width"], meta["original_height"]) == (96, 72)
    assert meta["image_format"] == "jpeg" and meta["image_bytes"] == len(data)
    # The hash of this very picture (a different picture differs in about half the bits).
    assert meta["phash"] == f"{phash(Image.open(io.BytesIO(data))):016x}"
    assert hamming(np.uint64(int(meta["phash"], 16)), np.uint64(phash(natural(2)))) > 16
    assert doc.media["jpg"] == data  # an upright image is not re-encoded


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda: Document("a", "caption", "s"), "no_image"),
        (lambda: Document("a", "caption", "s", media={"txt": b"x"}), "no_image"),
        (lambda: doc_with(b""), "empty_image"),
        (lambda: doc_with(b"this is not an image at all" * 10), "corrupt_image"),
        (lambda: doc_with(encoded(natural(2), quality=90)[:700]), "corrupt_image"),
        (lambda: doc_with(encoded(natural(3), "PNG")[:-40], "png"), "corrupt_image"),
        (lambda: doc_with(encoded(Image.new("RGB", (8, 8)), "PNG"), "png"), "image_too_small"),
        (lambda: doc_with(encoded(Image.new("RGB", (200, 20)), "PNG"), "png"), "aspect_ratio"),
    ],
)
def test_decode_excludes_bad_images_with_their_reason(make, reason):
    stage = DecodeImage(min_image_size=16, max_aspect_ratio=4.0)
    assert drop_reason(stage.apply(make())) == reason


def test_a_corrupt_image_names_pillows_error():
    result = DecodeImage().apply(doc_with(encoded(natural(2), quality=90)[:700]))
    assert result.reason == "corrupt_image" and "truncated" in result.detail["error"]


def test_a_bit_flipped_png_fails_its_checksum():
    data = bytearray(encoded(natural(4), "PNG"))
    data[len(data) // 2] ^= 0xFF
    assert drop_reason(DecodeImage().apply(doc_with(bytes(data), "png"))) == "corrupt_image"


@pytest.fixture
def pixels_loaded(monkeypatch) -> list[tuple[int, int]]:
    """The sizes of the images whose pixels Pillow decodes (allocates and fills) while the
    test runs: every decode goes through `ImageFile.load`, which still runs as it is."""
    sizes: list[tuple[int, int]] = []
    load = ImageFile.ImageFile.load

    def counted(image):
        sizes.append(image.size)
        return load(image)

    monkeypatch.setattr(ImageFile.ImageFile, "load", counted)
    return sizes


def test_a_header_claiming_ten_billion_pixels_is_refused_before_decoding(pixels_loaded):
    result = DecodeImage().apply(doc_with(png_header_only(100_000, 100_000), "png"))
    assert drop_reason(result) == "image_too_large"
    # Past the default limit but within what Pillow itself lets through: our own check.
    result = DecodeImage().apply(doc_with(png_header_only(10_000, 10_000), "png"))
    assert result.reason == "image_too_large" and result.detail["pixels"] == 100_000_000
    smaller = DecodeImage(max_pixels=5000).apply(doc_with(png_header_only(100, 100), "png"))
    assert smaller.reason == "image_too_large" and smaller.detail["pixels"] == 10_000
    assert pixels_loaded == []  # nothing of their gigabytes was allocated
    DecodeImage().apply(doc_with(encoded(natural(1), "PNG"), "png"))
    assert set(pixels_loaded) == {(96, 72)}  # what a decode looks like
    capped = DecodeImage(max_image_area=100).apply(doc_with(encoded(natural(1), "PNG"), "png"))
    assert capped.reason == "image_too_large"


def test_exif_orientation_turns_the_image_upright_in_its_bytes():
    image = Image.new("RGB", (40, 20), "white")
    image.paste((255, 0, 0), (0, 0, 10, 20))  # a red band on the left of the stored pixels
    exif = Image.Exif()
    exif[0x0112] = 6  # stored turned: display needs a quarter turn clockwise
    data = encoded(image, quality=95, exif=exif.tobytes())
    doc = DecodeImage().apply(doc_with(data))
    meta = doc.metadata
    assert (meta["width"], meta["height"]) == (20, 40)
    assert (meta["original_width"], meta["original_height"]) == (20, 40)
    upright = Image.open(io.BytesIO(doc.media["jpg"]))
    assert upright.size == (20, 40)
    assert upright.getexif().get(0x0112) is None
    red, white = upright.getpixel((10, 3)), upright.getpixel((10, 35))
    assert red[0] > 200 and red[1] < 60 and min(white) > 200  # the band is now at the top
    resized = ResizeImage(size=10, encode_format="png").apply(doc_with(data))
    assert resized.metadata["width"] == 10 and resized.metadata["height"] == 20
    ignored = DecodeImage(exif_orientation=False).apply(doc_with(data))
    assert (ignored.metadata["width"], ignored.metadata["height"]) == (40, 20)


@pytest.mark.parametrize(
    "image",
    [
        Image.new("P", (20, 20), 3),
        Image.new("RGBA", (20, 20), (0, 0, 0, 0)),
        Image.new("LA", (20, 20), (0, 0)),
        Image.new("CMYK", (20, 20), (0, 0, 0, 0)),
        Image.new("I;16", (20, 20), 65535),
        Image.new("L", (20, 20), 255),
    ],
    ids=lambda image: image.mode,
)
def test_every_mode_is_stored_as_rgb_with_transparency_on_white(image):
    fmt = "JPEG" if image.mode == "CMYK" else ("TIFF" if image.mode == "I;16" else "PNG")
    ext = {"JPEG": "jpg", "TIFF": "tif", "PNG": "png"}[fmt]
    result = ResizeImage(mode="none", encode_format="png").apply(doc_with(encoded(image, fmt), ext))
    stored = Image.open(io.BytesIO(result.media["png"]))
    assert stored.mode == "RGB"
    if image.mode != "P":
        assert stored.getpixel((5, 5)) == (255, 255, 255)


# resize_image


@pytest.mark.parametrize(
    ("options", "size"),
    [
        ({"size": 32, "mode": "keep_ratio"}, (43, 32)),
        ({"size": 32, "mode": "center_crop"}, (32, 32)),
        ({"size": 32, "mode": "border"}, (32, 32)),
        ({"size": 32, "mode": "none"}, (96, 72)),
        ({"size": 32, "mode": "none", "max_side": 48}, (48, 36)),
        ({"size": 64, "mode": "keep_ratio", "max_side": 80}, (80, 60)),
        ({"size": 200, "mode": "keep_ratio"}, (96, 72)),  # never enlarged by default
        ({"size": 144, "mode": "keep_ratio", "upscale": True}, (192, 144)),
        ({"size": 200, "mode": "center_crop"}, (72, 72)),
    ],
)
def test_resize_modes_give_their_output_size(options, size):
    doc = ResizeImage(**options).apply(doc_with(encoded(natural(5), quality=95)))
    assert (doc.metadata["width"], doc.metadata["height"]) == size
    assert Image.open(io.BytesIO(doc.media["jpg"])).size == size


def test_border_pads_with_its_colour_and_formats_change_the_extension():
    stage = ResizeImage(size=32, mode="border", border_color="#00ff00", encode_format="png")
    doc = stage.apply(doc_with(encoded(natural(6), quality=95)))
    assert set(doc.media) == {"png", "txt"} and doc.metadata["image_format"] == "png"
    image = Image.open(io.BytesIO(doc.media["png"]))
    assert image.getpixel((16, 0)) == (0, 255, 0) and image.size == (32, 32)
    webp = ResizeImage(size=32, encode_format="webp").apply(doc_with(encoded(natural(6))))
    assert "webp" in webp.media and webp.metadata["image_bytes"] == len(webp.media["webp"])


def test_resizing_gives_the_same_bytes_for_the_same_input():
    data = encoded(natural(7, (400, 300)), quality=95)
    for options in ({"size": 64}, {"size": 64, "mode": "center_crop"}, {"size": 300}):
        first = ResizeImage(**options).apply(doc_with(data)).media["jpg"]
        second = ResizeImage(**options).apply(doc_with(data)).media["jpg"]
        assert first == second


def test_a_large_jpeg_decoded_at_reduced_scale_looks_like_a_full_decode():
    data = encoded(natural(8, (800, 600)), quality=95)
    fast = ResizeImage(size=64).apply(doc_with(data)).media["jpg"]
    full = natural(8, (800, 600)).resize((85, 64), Image.Resampling.LANCZOS)
    difference = np.abs(
        np.asarray(Image.open(io.BytesIO(fast)), float) - np.asarray(full, float)
    ).mean()
    assert difference < 6


def test_keep_unchanged_keeps_the_original_bytes():
    data = encoded(natural(9, (48, 32)), quality=80)
    doc = ResizeImage(size=64, keep_unchanged=True).apply(doc_with(data))
    assert doc.media["jpg"] == data
    assert drop_reason(ResizeImage().apply(doc_with(b"junk"))) == "corrupt_image"


def test_bad_options_are_config_errors():
    with pytest.raises(ConfigError, match="border_color"):
        build_stage("resize_image", {"border_color": "no-such-colour"})
    with pytest.raises(ConfigError, match="mode"):
        build_stage("resize_image", {"mode": "stretch"})


# perceptual hash


def variants(image: Image.Image) -> dict[str, Image.Image]:
    w, h = image.size
    return {
        "low_quality": Image.open(io.BytesIO(encoded(image, quality=30))),
        "resized": image.resize((w * 3 // 4, h * 3 // 4), Image.Resampling.BILINEAR),
        "cropped": image.crop((1, 1, w - 1, h - 1)),
        "colour": ImageEnhance.Color(ImageEnhance.Brightness(image).enhance(1.1)).enhance(0.8),
    }


def test_phash_is_stable_under_small_edits_and_far_between_different_images():
    images = [natural(seed) for seed in range(40)]
    hashes = np.array([phash(image) for image in images], dtype=np.uint64)
    for image, value in zip(images, hashes, strict=True):
        for name, copy in variants(image).items():
            assert hamming(np.uint64(phash(copy)), value) <= 10, name
    distances = hamming(hashes[:, None], hashes[None, :])[np.triu_indices(len(hashes), 1)]
    assert distances.min() > 10 and 24 < distances.mean() < 40


def test_phash_is_a_pure_function_of_the_pixels():
    image = natural(11)
    assert (
        phash(image) == phash(image.copy()) == phash(Image.open(io.BytesIO(encoded(image, "PNG"))))
    )
    assert (
        phash(Image.new("RGB", (30, 30), "red")) == phash(Image.new("L", (50, 20), 77)) == 1 << 63
    )


uint64s = st.integers(0, (1 << 64) - 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(uint64s, uint64s, uint64s), min_size=1, max_size=20))
def test_hamming_is_a_metric_counting_differing_bits(triples):
    a, b, c = (np.array(column, dtype=np.uint64) for column in zip(*triples, strict=True))
    expected = [bin(x ^ y).count("1") for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert hamming(a, b).tolist() == expected
    assert (hamming(a, a) == 0).all() and (hamming(a, b) == hamming(b, a)).all()
    assert (hamming(a, c) <= hamming(a, b) + hamming(b, c)).all()


# caption_filter, and the text stages on image documents


@pytest.mark.parametrize(
    ("text", "reason"),
    [("", "caption_too_short"), ("a cat", "caption_too_short"), ("a b c", "caption_too_short"),
     ("one two three four five six", "caption_too_long"),
     ("a fine red bicycle", None)],
)  # fmt: skip
def test_caption_limits(text, reason):
    stage = CaptionFilter(max_words=5, max_chars=40)
    result = stage.apply(Document("a", text, "s"))
    if reason is None:
        assert result.metadata["caption_words"] == 4 and result.metadata["caption_chars"] == 18
    else:
        assert drop_reason(result) == reason
    too_long = CaptionFilter(max_chars=10).apply(Document("a", "a very long caption", "s"))
    assert too_long.detail == {"signal": "chars", "value": 19, "limit": 10}


def test_normalize_and_langid_act_on_the_caption_and_leave_the_image_alone():
    data = encoded(natural(12))
    texts = [
        "Ein  Foto von einem roten Fahrrad vor einem alten Haus",
        "A photo of a red bicycle by a door",
    ]
    docs = [Document(f"i{n}", text, "web", media={"jpg": data}) for n, text in enumerate(texts)]
    normalize, langid = build_stage("normalize", {}), build_stage("langid", {})
    normalize.setup()
    langid.setup()
    results = langid.apply_batch(normalize.apply_batch(docs))
    assert [r.metadata["language"] for r in results] == ["de", "en"]
    assert all(r.media == {"jpg": data} for r in results)


def test_clip_score_without_open_clip_says_how_to_install_it():
    stage = build_stage("clip_score", {"min_score": 0.3})
    assert isinstance(stage, ClipScore)
    with pytest.raises(ConfigError, match="pip install open_clip_torch"):
        stage.setup()


def test_error_details_are_the_same_in_two_identical_runs(tmp_path):
    import json
    import tarfile

    import pyarrow.parquet as pq

    from mixplane.process.pipeline import run_pipeline

    good = encoded(natural(20), quality=90)
    png = encoded(natural(21), "PNG")
    bad = {  # Pillow names most of these unreadable by the repr of the buffer it was given
        "garbage.jpg": b"\xff\xd8\xff\xe0" + b"not a jpeg" * 30,
        "text.png": b"just some text, not an image at all" * 4,
        "cut.jpg": good[: len(good) // 3],
        "cut.png": png[:-40],
        "flipped.png": png[:60] + bytes([png[60] ^ 0xFF]) + png[61:],
        "riff.webp": b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 40,
        "empty.gif": b"GIF89a",
    }
    raw = tmp_path / "raw"
    raw.mkdir()
    with tarfile.open(raw / "bad.tar", "w") as tar:
        for n, (name, data) in enumerate(bad.items()):
            stem, ext = name.split(".")
            for member, payload in ((f"{n:03d}.{ext}", data), (f"{n:03d}.txt", stem.encode())):
                info = tarfile.TarInfo(member)
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
    outputs = []
    for run in ("one", "two"):
        stages = [{"decode_image": {}}, {"resize_image": {"size": 32}}]
        result = run_pipeline({"input": str(raw / "*.tar"), "output": str(tmp_path / run),
                               "stages": stages})  # fmt: skip
        assert result.stats["excluded"] == len(bad)
        manifest = json.loads((tmp_path / run / "_manifest.json").read_text())
        outputs.append(manifest["outputs"])
    details = pq.read_table(tmp_path / "one" / "_excluded").column("detail").to_pylist()
    assert not [d for d in details if " at 0x" in d], details
    unidentified = (
        '{"error":"UnidentifiedImageError: cannot identify image file <_io.BytesIO object>"}'
    )
    assert details.count(unidentified) == 2
    excluded = [
        (tmp_path / run / "_excluded" / "part-00000.parquet").read_bytes() for run in ("one", "two")
    ]
    assert excluded[0] == excluded[1]
    assert outputs[0] == outputs[1]


# transparency and blank images


def white_logo() -> Image.Image:
    """A white logo (a ring and a bar) on a transparent background."""
    logo = Image.new("RGBA", (120, 90), (255, 255, 255, 0))
    draw = ImageDraw.Draw(logo)
    draw.ellipse((10, 10, 70, 70), outline=(255, 255, 255, 255), width=8)
    draw.rectangle((80, 20, 110, 60), fill=(255, 255, 255, 255))
    return logo


def test_a_white_logo_on_transparency_is_read_and_stored_on_a_background_that_shows_it():
    doc = doc_with(encoded(white_logo(), "PNG"), "png")
    kept = DecodeImage().apply(doc)
    assert isinstance(kept, Document), kept
    assert kept.metadata["blank"] is False and kept.metadata["contrast"] > 50
    assert kept.metadata["phash"] != f"{1 << 63:016x}"  # not the flat image's hash
    stored = ResizeImage(mode="none", encode_format="png").apply(kept).media["png"]
    pixels = np.asarray(Image.open(io.BytesIO(stored)))
    assert pixels[40, 40].tolist() == [0, 0, 0]  # inside the ring: the background, black
    assert pixels[40, 95].tolist() == [255, 255, 255]  # the bar stays white

    on_white = DecodeImage(background="white").apply(doc_with(encoded(white_logo(), "PNG"), "png"))
    assert on_white == Drop(
        "blank_image", {"contrast": 0.0, "blank_contrast": 2.0, "transparent": True}
    )
    flagged = DecodeImage(background=[255, 255, 255], drop_blank=False).apply(
        doc_with(encoded(white_logo(), "PNG"), "png")
    )
    assert flagged.metadata["blank"] is True and flagged.metadata["contrast"] == 0.0
    grey = ResizeImage(mode="none", encode_format="png", background="#808080")
    stored = grey.apply(doc_with(encoded(white_logo(), "PNG"), "png")).media["png"]
    assert Image.open(io.BytesIO(stored)).getpixel((40, 40)) == (128, 128, 128)
    # A dark drawing on transparency stays on white, as before.
    dark = Image.new("LA", (60, 60), (0, 0))
    ImageDraw.Draw(dark).line((5, 5, 55, 55), fill=(20, 255), width=4)
    stored = ResizeImage(mode="none", encode_format="png").apply(
        doc_with(encoded(dark, "PNG"), "png")
    )
    assert Image.open(io.BytesIO(stored.media["png"])).getpixel((50, 5)) == (255, 255, 255)
    with pytest.raises(ValueError, match="not a colour: 'sky'"):
        DecodeImage(background="sky")


def blank_images() -> dict[str, bytes]:
    rng = np.random.default_rng(3)
    noisy = np.clip(235 + rng.normal(0, 3, (120, 160, 3)), 0, 255).astype(np.uint8)
    faint = (120 + 6 * np.linspace(0, 1, 120))[:, None, None] * np.ones((120, 160, 3))
    return {
        "white": encoded(Image.new("RGB", (160, 120), "white"), quality=80),
        "navy": encoded(Image.new("RGB", (160, 120), "navy"), "PNG"),
        "grey-noise": encoded(Image.fromarray(noisy), quality=70),
        "faint-gradient": encoded(Image.fromarray(faint.astype(np.uint8)), quality=90),
        "clear": encoded(Image.new("RGBA", (160, 120), (0, 0, 0, 0)), "PNG"),
    }


def test_blank_and_single_colour_images_are_excluded_by_default():
    for name, data in blank_images().items():
        result = DecodeImage().apply(doc_with(data, "png" if data[:4] == b"\x89PNG" else "jpg"))
        assert drop_reason(result) == "blank_image", name
        assert result.detail["contrast"] < 2.0
    kept = DecodeImage(drop_blank=False).apply(doc_with(blank_images()["navy"], "png"))
    assert kept.metadata["blank"] is True
    # A low-contrast photograph is not blank.
    dim = np.asarray(natural(8, (160, 120)), dtype=np.float64)
    dim = Image.fromarray((128 + (dim - dim.mean()) * 0.15).astype(np.uint8))
    photo = DecodeImage().apply(doc_with(encoded(dim, quality=90)))
    assert photo.metadata["blank"] is False and 2.0 < photo.metadata["contrast"] < 15


def test_chinese_and_japanese_captions_count_a_word_per_character():
    stage = CaptionFilter()
    chinese = stage.apply(Document("zh", "一只黑猫在沙发上睡觉。", "s"))
    assert chinese.metadata["caption_words"] == 10  # the full stop is no word
    japanese = stage.apply(Document("ja", "ソファで眠る黒い猫", "s"))
    assert japanese.metadata["caption_words"] == 9
    mixed = stage.apply(Document("mixed", "新款 iPhone 手机壳", "s"))
    assert mixed.metadata["caption_words"] == 6
    assert stage.apply(Document("one", "猫咪", "s")).detail == {
        "signal": "words",
        "value": 2,
        "limit": 3,
    }
    # Spaced text counts as before (the DataComp baseline), accents and all.
    assert stage.apply(Document("de", "Ein Hund im Schnee", "s")).metadata["caption_words"] == 4


def test_short_captions_get_an_undetermined_language_instead_of_a_wrong_one():
    stage = build_stage("langid", {})
    stage.setup()
    image = {"jpg": encoded(natural(13))}
    # The model calls these Dutch, Frisian and German; the last is long enough.
    short = ["Map of Europe", "Tulip field in spring", "Modern kitchen interior",
             "Old stone bridge over a river"]  # fmt: skip
    assert [stage.detect(text)[0] for text in short] == ["nl", "fy", "de", "en"]
    docs = [Document(f"c{n}", text, "web", media=image) for n, text in enumerate(short)]
    labels = [doc.metadata["language"] for doc in stage.apply_batch(docs)]
    assert labels == ["und", "und", "und", "en"]  # 13, 21 and 23 characters: below 25
    assert stage.apply(docs[0]).metadata["language_score"] == 0.0
    assert stage.detect("Map of Europe", caption=True) == ("und", 0.0)
    # Text documents keep the model's label unless min_chars says otherwise; Chinese and
    # Japanese captions, whose script decides, are labelled however short.
    assert build_stage("langid", {"min_chars": 25}).detect("Map of Europe") == ("und", 0.0)
    assert stage.detect("黒い猫", caption=True)[0] == "ja"
    assert build_stage("langid", {"min_chars": 0}).detect("Map of Europe", caption=True)[0] == "nl"
