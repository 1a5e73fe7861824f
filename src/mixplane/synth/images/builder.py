"""Producing the samples one at a time, in a seeded order across the four sources.

Each source gets a shuffled queue of kinds (originals, planted copies, broken files). A copy
due before any original it could copy is postponed to the end of its queue. Copies come
from a reservoir of earlier originals, mostly of the same source, and each original is
copied at most once, so the ground truth's pairs are apart from each other.
"""

from __future__ import annotations

import hashlib
import io
import random
from dataclasses import dataclass
from typing import Any

from PIL import Image

from mixplane.io.atomic import join_url, write_bytes
from mixplane.synth.images import encoding
from mixplane.synth.images.captions import (
    CAPTION_LANGUAGES,
    describe,
    short_caption,
    with_email,
)
from mixplane.synth.images.scene import Scene, draw_scene, picture_size, render
from mixplane.synth.images.sinks import (
    IMG2DATASET_PER_SHARD,
    SAMPLES_PER_SHARD,
    LooseFiles,
    ShardedTars,
    json_bytes,
    sample_members,
    truncated_tar,
    write_img2dataset_shard,
)
from mixplane.synth.images.truth import ImageTruth
from mixplane.synth.lexicon import pick
from mixplane.synth.plan import draw, interleaving, largest_remainder

SOURCE_SHARES = {"webdataset": 0.6, "img2dataset": 0.15, "folder": 0.1, "urls": 0.15}
EXACT_SHARE = 0.04
NEAR_SHARE = 0.10
BAD_SHARE = 0.006  # of each bad kind, per source that holds bad files
BOMB_SHARE = 0.001
FAILED_SHARE = 0.05  # img2dataset rows that failed to download, urls that answer 404
EXIF_SHARE = 0.06
CAPTION_KINDS = {"missing": 0.02, "short": 0.03, "pii": 0.02, "ok": 0.93}
SAME_SOURCE_COPY = 0.8
RESERVOIR = 256
TRUNCATED_SHARD_MAX = 40
WDS = "raw/webdataset/shard-{index:05d}.tar"
HOSTS = ("images.example.com", "cdn.photos.example.net", "static.gallery.example.org")
BAD_BY_SOURCE = {
    "webdataset": ("corrupt", "truncated", "empty", "tiny", "extreme_aspect"),
    "folder": ("corrupt", "truncated", "empty", "tiny", "extreme_aspect"),
}
FETCH_ERRORS = (
    "HTTP Error 404: Not Found",
    "<urlopen error timed out>",
    "HTTP Error 403: Forbidden",
)


@dataclass(slots=True)
class Original:
    sample_id: str
    doc_id: str | None
    scene: Scene
    data: bytes
    fmt: str


class Reservoir:
    """A uniform sample of up to `RESERVOIR` earlier originals."""

    def __init__(self) -> None:
        self.items: list[Original] = []
        self.seen = 0

    def offer(self, item: Original, rng: random.Random) -> None:
        self.seen += 1
        if len(self.items) < RESERVOIR:
            self.items.append(item)
        else:
            slot = rng.randrange(self.seen)
            if slot < RESERVOIR:
                self.items[slot] = item

    def take(self, rng: random.Random) -> Original:
        index = rng.randrange(len(self.items))
        self.items[index], self.items[-1] = self.items[-1], self.items[index]
        return self.items.pop()


def plan_kinds(source: str, count: int, rng: random.Random) -> list[tuple[str, str | None]]:
    """`(kind, copy_kind)` for each sample of `source`, shuffled."""
    kinds: list[tuple[str, str | None]] = []
    for bad in BAD_BY_SOURCE.get(source, ()):
        kinds += [(bad, None)] * max(1, round(count * BAD_SHARE))
    if source == "webdataset":
        kinds += [("bomb", None)] * max(1, round(count * BOMB_SHARE))
    failed = {"img2dataset": "failed_download", "urls": "missing_url"}.get(source)
    if failed:
        kinds += [(failed, None)] * max(1, round(count * FAILED_SHARE))
    kinds += [("exact_duplicate", "exact")] * round(count * EXACT_SHARE)
    near = round(count * NEAR_SHARE)
    kinds += [("near_duplicate", encoding.NEAR_KINDS[i % 4]) for i in range(near)]
    kinds = kinds[:count] + [("original", None)] * max(0, count - len(kinds))
    rng.shuffle(kinds)
    return kinds


class ImageCorpusBuilder:
    """Writes `samples` image-caption samples under `out` from `seed`."""

    def __init__(self, out: str, samples: int, seed: int, url_base: str):
        self.out, self.url_base = out, url_base
        self.rng = random.Random(f"mixplane-synth-images:{seed}")
        self.counts = largest_remainder(samples, SOURCE_SHARES)
        wds = self.counts["webdataset"]
        self.truncated_count = min(TRUNCATED_SHARD_MAX, wds // 10) if wds >= 20 else 0
        planned = dict(self.counts, webdataset=wds - self.truncated_count)
        self.queues = {s: plan_kinds(s, n, self.rng) for s, n in sorted(planned.items())}
        self.order = interleaving(planned, self.rng)
        self.pools = {source: Reservoir() for source in SOURCE_SHARES}
        self.truth = ImageTruth()
        self.serial = 0
        self.wds = ShardedTars(out, WDS, SAMPLES_PER_SHARD)
        self.wds_keys = 0
        self.i2d: list[dict[str, Any]] = []
        self.folder = LooseFiles(join_url(out, "raw/folder"))
        self.served = LooseFiles(join_url(out, "raw/urls"))
        self.url_lines: list[bytes] = []
        self.files: dict[str, list[str]] = {}

    # -- one sample --------------------------------------------------------------------

    def add(self, source: str) -> None:
        """Produce the next sample of `source`."""
        queue = self.queues[source]
        kind, copy_kind = queue.pop()
        if copy_kind is not None and not any(p.items for p in self.pools.values()):
            queue.insert(0, (kind, copy_kind))  # nothing to copy yet: later
            kind, copy_kind = "original", None
        sample = self._image(source, kind, copy_kind)
        self._caption(source, kind, sample)
        self._place(source, sample)
        if sample.pop("offer", False):
            self.pools[source].offer(
                Original(
                    sample["sample_id"],
                    sample["doc_id"],
                    sample.pop("scene"),
                    sample["data"],
                    sample["image_format"],
                ),
                self.rng,
            )
        sample.pop("scene", None)
        self.truth.add(sample)

    def _new_id(self) -> str:
        self.serial += 1
        return f"img-{self.serial:06d}"

    def _image(self, source: str, kind: str, copy_kind: str | None) -> dict[str, Any]:
        """The sample's image bytes and what is known about them."""
        rng = self.rng
        sample: dict[str, Any] = {"sample_id": self._new_id(), "source": source, "kind": kind}
        sample["exif_orientation"] = 0
        if kind == "failed_download":
            sample |= {"data": None, "ext": "jpg", "scene": draw_scene(rng, *picture_size(rng))}
            return sample
        if kind == "original" or kind == "missing_url":
            scene = draw_scene(rng, *picture_size(rng))
            image = render(scene)
            fmt = "jpeg" if source == "img2dataset" else encoding.original_format(rng)
            orientation = 0
            if fmt == "jpeg" and source != "img2dataset" and rng.random() < EXIF_SHARE:
                orientation = pick(rng, tuple(encoding.STORED_FROM_DISPLAYED))
            data, fmt = encoding.encode_original(rng, image, fmt, orientation)
            stored = (image.height, image.width) if orientation in (6, 8) else image.size
            sample |= {"scene": scene, "data": data, "image_format": fmt}
            sample |= {
                "width": image.width,
                "height": image.height,
                "exif_orientation": orientation,
            }
            sample |= {"stored_width": stored[0], "stored_height": stored[1]}
            sample["offer"] = kind == "original" and orientation == 0
            return sample
        if copy_kind is not None:
            return sample | self._copy(source, copy_kind)
        return sample | self._broken(kind)

    def _copy(self, source: str, copy_kind: str) -> dict[str, Any]:
        rng = self.rng
        sources = [s for s, pool in self.pools.items() if pool.items]
        home = source if source in sources and rng.random() < SAME_SOURCE_COPY else None
        base = self.pools[home or pick(rng, sources)].take(rng)
        sample: dict[str, Any] = {"copy_of": base.sample_id, "copy_of_doc": base.doc_id}
        sample |= {"copy_kind": copy_kind, "scene": base.scene}
        if copy_kind == "exact":
            data, fmt, detail = base.data, base.fmt, "same bytes"
            width, height = Image.open(io.BytesIO(data)).size
        else:
            decoded = Image.open(io.BytesIO(base.data)).convert("RGB")
            copy, data, fmt, detail = encoding.near_copy(rng, decoded, base.fmt, copy_kind)
            width, height = copy.size
        sample |= {"data": data, "image_format": fmt, "copy_detail": detail}
        sample |= {"width": width, "height": height, "stored_width": width}
        sample["stored_height"] = height
        if copy_kind == "exact":
            sample["base_caption"] = base.sample_id
        return sample

    def _broken(self, kind: str) -> dict[str, Any]:
        rng = self.rng
        if kind == "corrupt":
            return {"data": encoding.corrupt_bytes(rng), "ext": "jpg"}
        if kind == "empty":
            return {"data": b"", "ext": pick(rng, ("jpg", "png"))}
        if kind == "bomb":
            side = encoding.BOMB_SIDE
            data = encoding.bomb_png()
            return {"data": data, "image_format": "png", "width": side, "height": side}
        if kind == "tiny":
            size = encoding.tiny_size(rng)
        elif kind == "extreme_aspect":
            size = encoding.extreme_size(rng)
        else:
            size = picture_size(rng)
        scene = draw_scene(rng, *size)
        data, fmt = encoding.encode(render(scene), pick(rng, ("jpeg", "jpeg", "png")))
        if kind == "truncated":
            data = encoding.truncated(data, rng)
        sample = {"scene": scene, "data": data, "image_format": fmt}
        return sample | {"width": size[0], "height": size[1]}

    def _caption(self, source: str, kind: str, sample: dict[str, Any]) -> None:
        rng = self.rng
        code = draw(rng, CAPTION_LANGUAGES)
        caption_kind = draw(rng, CAPTION_KINDS)
        if caption_kind == "missing" and source not in ("webdataset", "folder"):
            caption_kind = "ok"
        # Unreadable files still came with a caption describing the picture they were.
        scene = sample.get("scene") or draw_scene(rng, *picture_size(rng))
        base = sample.pop("base_caption", None)
        if caption_kind == "missing":
            sample |= {"caption": None, "language": None}
        elif caption_kind == "short":
            sample |= {"caption": short_caption(code, rng), "language": code}
        else:
            original = self.truth.by_id[base] if base is not None else None
            if original and original["caption"] and rng.random() < 0.5:
                # Half the exact copies were reposted with their caption as it was.
                caption_kind, sample["email"] = original["caption_kind"], original["email"]
                sample |= {"caption": original["caption"], "language": original["language"]}
            else:
                caption = describe(scene, code, rng)
                if caption_kind == "pii":
                    caption, sample["email"] = with_email(caption, code, rng)
                sample |= {"caption": caption, "language": code}
        sample["caption_kind"] = caption_kind

    # -- placing it in its source ------------------------------------------------------

    def _place(self, source: str, sample: dict[str, Any]) -> None:
        data = sample.get("data")
        fmt = sample.get("image_format")
        ext = sample.pop("ext", None) or encoding.EXTENSIONS.get(fmt or "", "jpg")
        if data is not None and sample["kind"] not in ("missing_url", "failed_download"):
            sample["image_bytes"] = len(data)
            sample["sha256"] = hashlib.sha256(data).hexdigest()
        sample.setdefault("copy_of", None)
        if source == "webdataset":
            self._place_wds(sample, ext)
        elif source == "img2dataset":
            self._place_i2d(sample, ext)
        elif source == "folder":
            self._place_folder(sample, ext)
        else:
            self._place_url(sample, ext)

    def _origin(self, sample_id: str, ext: str) -> str:
        host = HOSTS[int(sample_id[-1]) % len(HOSTS)]
        return f"https://{host}/p/{sample_id[4:7]}/{sample_id}.{ext}"

    def _meta(self, sample: dict[str, Any], ext: str) -> dict[str, Any]:
        meta = {"sample_id": sample["sample_id"], "url": self._origin(sample["sample_id"], ext)}
        if sample["caption"] is not None:
            meta["caption"] = sample["caption"]
        return meta

    def _place_wds(self, sample: dict[str, Any], ext: str) -> None:
        name, _ = self.wds.next_slot()
        key = f"{self.wds_keys:06d}"
        self.wds_keys += 1
        meta = self._meta(sample, ext)
        sample |= {"file": name, "key": key, "doc_id": f"{name.rsplit('/', 1)[1]}/{key}"}
        sample["url"] = meta["url"]
        self.wds.write(sample_members(key, (ext, sample["data"]), sample["caption"], meta))

    def _place_i2d(self, sample: dict[str, Any], ext: str) -> None:
        shard, index = divmod(len(self.i2d), IMG2DATASET_PER_SHARD)
        key = f"{shard:05d}{index:04d}"
        ok = sample["kind"] != "failed_download"
        url = self._origin(sample["sample_id"], ext)
        row = {
            "key": key,
            "status": "success" if ok else "failed_to_download",
            "error_message": None if ok else pick(self.rng, FETCH_ERRORS),
            "width": sample.get("width") if ok else None,
            "height": sample.get("height") if ok else None,
            "original_width": sample.get("width") if ok else None,
            "original_height": sample.get("height") if ok else None,
            "sha256": sample.get("sha256"),
            "url": url,
            "caption": sample["caption"],
            "sample_id": sample["sample_id"],
        }
        file = f"raw/img2dataset/{shard:05d}.tar" if ok else f"raw/img2dataset/{shard:05d}.parquet"
        sample |= {"file": file, "key": key, "url": url}
        sample["doc_id"] = f"{shard:05d}.tar/{key}" if ok else None
        if not ok:
            sample |= {"width": None, "height": None, "image_format": None}
        members = sample_members(key, (ext, sample["data"]), sample["caption"], row) if ok else []
        self.i2d.append({"row": row, "members": members})

    def _place_folder(self, sample: dict[str, Any], ext: str) -> None:
        stem = f"photo_{sample['sample_id'][4:]}"
        name = f"{stem}.{ext}"
        self.folder.write(name, sample["data"])
        roll = self.rng.random()
        meta = self._meta(sample, ext)
        if sample["caption"] is not None and roll < 0.8:
            text = sample["caption"].encode("utf-8")
            self.folder.write(f"{stem}.txt", text)
        if sample["caption"] is None or roll >= 0.7:
            self.folder.write(f"{stem}.json", json_bytes(meta))
        sample |= {"file": f"raw/folder/{name}", "key": stem, "doc_id": name, "url": meta["url"]}

    def _place_url(self, sample: dict[str, Any], ext: str) -> None:
        name = f"images/{sample['sample_id']}.{ext}"
        url = f"{self.url_base}{name}"
        record = {"id": sample["sample_id"], "url": url, "caption": sample["caption"]}
        self.url_lines.append(json_bytes(record) + b"\n")
        if sample["kind"] != "missing_url":
            self.served.write(name, sample["data"])
        else:
            sample |= {"image_bytes": None, "sha256": None}
        sample |= {"file": f"raw/urls/{name}", "key": sample["sample_id"], "url": url}
        sample["doc_id"] = sample["sample_id"]

    # -- finishing ---------------------------------------------------------------------

    def close(self) -> None:
        """Write the truncated shard, the img2dataset shards and the URL list."""
        self._truncated_shard()
        self.wds.close()
        self.files["webdataset"] = list(self.wds.names)
        names: list[str] = []
        for start in range(0, len(self.i2d), IMG2DATASET_PER_SHARD):
            shard = self.i2d[start : start + IMG2DATASET_PER_SHARD]
            index = start // IMG2DATASET_PER_SHARD
            names += write_img2dataset_shard(self.out, "raw/img2dataset", index, shard)
        self.files["img2dataset"] = names
        self.files["folder"] = sorted(f"raw/folder/{name}" for name in self.folder.names)
        write_bytes(join_url(self.out, "raw/urls/urls.jsonl"), b"".join(self.url_lines))
        served = sorted(f"raw/urls/{name}" for name in self.served.names)
        self.files["urls"] = ["raw/urls/urls.jsonl", *served]

    def _truncated_shard(self) -> None:
        """The last WebDataset shard: fresh originals, cut inside one sample's image."""
        count = self.truncated_count
        if not count:
            return
        self.wds.close()
        name = WDS.format(index=len(self.wds.names))
        self.wds.names.append(name)
        cut = count * 3 // 5
        members = []
        for index in range(count):
            sample = self._image("webdataset", "original", None)
            sample.pop("offer")
            self._caption("webdataset", "original", sample)
            sample.pop("scene")
            ext = encoding.EXTENSIONS[sample["image_format"]]
            key = f"{self.wds_keys:06d}"
            self.wds_keys += 1
            meta = self._meta(sample, ext)
            members.append(sample_members(key, (ext, sample["data"]), sample["caption"], meta))
            if index == cut:
                sample["kind"] = "truncated_member"
            elif index > cut:
                sample["kind"] = "lost_in_truncation"
            sample |= {"file": name, "key": key, "doc_id": f"{name.rsplit('/', 1)[1]}/{key}"}
            sample |= {"url": meta["url"], "image_bytes": len(sample["data"])}
            sample["sha256"] = hashlib.sha256(sample["data"]).hexdigest()
            self.truth.add(sample)
        write_bytes(join_url(self.out, name), truncated_tar(members, cut))
