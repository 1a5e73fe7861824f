"""One measured epoch of one audio loader: decode FLAC, log-mel features, padded batches.

    python bench/audio/loader_runners.py mixplane|webdataset FOLDER --workers N
        (--batch B | --batch-seconds S) [--dump KEYS.json OUT.npz]

Both read FOLDER/shards/part-*.tar (audio shards written by `mixplane process`) once, every
clip once, and compute the same log-mel features (16 kHz, n_fft 400, hop 160, periodic
Hann, 80 HTK mel filters, power spectrum, log(max(x, 1e-10))). The clock starts when the
first batch arrives and stops at the last; CPU seconds are those of this process and its
DataLoader workers over the same window. Prints one JSON line: clips, audio seconds,
padding, a digest of the delivered sample names (shard/key) to compare between tools.

- `mixplane` (the project's venv): `AudioTextDataset` over the shards with
  `features=LogMel()`, duration-bucketed batches of `--batch-seconds`, through
  `audio_text_loader`.
- `webdataset` (bench/.venvs/torchaudio): the pipeline a user writes:
  `wds.WebDataset(urls, shardshuffle=True, seed=...)` with a shuffle buffer, each sample's
  FLAC decoded by `torchaudio.load` (torchcodec, FFmpeg) from memory, its features by
  `torchaudio.transforms.MelSpectrogram` then `log(clamp(x, 1e-10))`, batched `--batch` at
  a time by a torch DataLoader whose collate function pads audio and features to the
  batch's longest clip. (webdataset's own `torch_audio` decoder writes each clip to a
  temporary file first; decoding from memory is the faster choice.)

`--dump KEYS.json OUT.npz`: the features (valid frames only) of the clips named in
KEYS.json, as the batches delivered them, for the features check.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import io
import json
import os
import sys
import time
from pathlib import Path

RATE = 16000
N_FFT, HOP, N_MELS, FLOOR = 400, 160, 80, 1e-10
SHUFFLE_BUFFER = 1000


def tree_cpu() -> float:
    """CPU seconds (user + system) of this process and its descendants (DataLoader workers),
    live or exited, so far; from /proc, since the peer's venv has no psutil."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # exited meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (name) "
        parents[int(entry)] = int(fields[1])
        # utime, stime, and cutime, cstime: those of its children it has waited for (the
        # workers, once a DataLoader has joined them)
        ticks[int(entry)] = sum(int(field) for field in fields[11:15])
    tree, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        tree.update(children)
        frontier += children
    return sum(ticks.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


def webdataset_loader(folder: str, workers: int, batch: int):
    """The peer: a torch DataLoader over a webdataset pipeline; batches as dicts of
    `audio` (B, T), `lengths`, `features` (B, frames, 80), `feature_lengths`, `names`."""
    import torch
    import torchaudio
    import webdataset as wds

    mel = torchaudio.transforms.MelSpectrogram(
        sample_rate=RATE, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS
    )

    def prepare(sample: dict) -> dict:
        waveform, rate = torchaudio.load(io.BytesIO(sample["flac"]))
        if rate != RATE:
            raise ValueError(f"{sample['__key__']}: {rate} Hz, expected {RATE}")
        clip = waveform[0]
        features = torch.log(torch.clamp(mel(clip), min=FLOOR)).T  # (frames, 80)
        name = f"{os.path.basename(sample['__url__'])}/{sample['__key__']}"
        return {"audio": clip, "features": features, "text": sample["txt"].decode(), "name": name}

    def collate(samples: list[dict]) -> dict:
        lengths = torch.tensor([len(s["audio"]) for s in samples])
        frames = torch.tensor([len(s["features"]) for s in samples])
        audio = torch.zeros(len(samples), int(lengths.max()))
        features = torch.zeros(len(samples), int(frames.max()), N_MELS)
        for row, sample in enumerate(samples):
            audio[row, : lengths[row]] = sample["audio"]
            features[row, : frames[row]] = sample["features"]
        return {"audio": audio, "lengths": lengths, "features": features,
                "feature_lengths": frames, "text": [s["text"] for s in samples],
                "names": [s["name"] for s in samples]}  # fmt: skip

    urls = sorted(glob.glob(os.path.join(folder, "shards", "part-*.tar")))
    dataset = (
        wds.WebDataset(urls, shardshuffle=len(urls), seed=1234, nodesplitter=None)
        .shuffle(SHUFFLE_BUFFER)
        .map(prepare)
    )
    return torch.utils.data.DataLoader(
        dataset, batch_size=batch, num_workers=workers, collate_fn=collate
    )


def mixplane_loader(folder: str, workers: int, batch_seconds: float):
    """Ours: `AudioTextDataset` with `LogMel` features through `audio_text_loader`; returns
    the loader and the dataset (to name its clips)."""
    from mixplane.load.audio import AudioTextDataset
    from mixplane.load.audio.features import LogMel
    from mixplane.load.audio.torch import audio_text_loader

    logmel = LogMel(sample_rate=RATE, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS, floor=FLOOR)
    dataset = AudioTextDataset(
        os.path.join(folder, "shards"), batch_seconds=batch_seconds, features=logmel, seed=1234
    )
    return audio_text_loader(dataset, num_workers=workers), dataset


def mixplane_names(dataset, index) -> list[str]:
    """`shard.tar/KEY` of the clips at global positions `index`, as webdataset names them
    (keys from the shards' metadata, whose rows are in sample order)."""
    import numpy as np
    import pyarrow.parquet as pq

    _, shards, samples = dataset.sources(np.asarray(index, dtype=np.int64))
    keys = {}
    for shard in sorted(set(shards.tolist())):
        folder, stem = dataset.resolved.shards[shard]
        meta = pq.read_table(os.path.join(folder, f"{stem}.meta.parquet"), columns=["key"])
        keys[shard] = (f"{stem}.tar", meta.column("key").to_pylist())
    pairs = zip(shards.tolist(), samples.tolist(), strict=True)
    return [f"{keys[shard][0]}/{keys[shard][1][sample]}" for shard, sample in pairs]


def batch_view(tool: str, batch: dict) -> dict:
    """What the measurement needs of a batch, the same for both tools: numpy lengths,
    feature lengths and the padded widths; the peer's clip names, our global positions."""
    if tool == "webdataset":
        return {
            "lengths": batch["lengths"].numpy(),
            "width": batch["audio"].shape[1],
            "frame_lengths": batch["feature_lengths"].numpy(),
            "frames": batch["features"].shape[1],
            "names": batch["names"],
        }
    return {
        "lengths": batch["lengths"].numpy(),
        "width": batch["audio"].shape[1],
        "frame_lengths": batch["feature_mask"].numpy().sum(axis=1),
        "frames": batch["features"].shape[1],
        "names": batch["index"].tolist(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tool", choices=["mixplane", "webdataset"])
    parser.add_argument("folder")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--batch-seconds", type=float, default=200.0)
    parser.add_argument("--dump", nargs=2, metavar=("KEYS_JSON", "OUT_NPZ"))
    args = parser.parse_args()
    import numpy as np
    import torch

    torch.set_num_threads(1)  # one core per process, as in a loader worker
    started = time.perf_counter()
    dataset = None
    if args.tool == "webdataset":
        loader = webdataset_loader(args.folder, args.workers, args.batch)
    else:
        loader, dataset = mixplane_loader(args.folder, args.workers, args.batch_seconds)
    wanted = set(json.loads(Path(args.dump[0]).read_text())) if args.dump else set()
    if dataset is not None and wanted:  # our batches name clips by position
        positions = range(dataset.epoch_length)
        named = zip(positions, mixplane_names(dataset, positions), strict=True)
        wanted = {position for position, name in named if name in wanted}
    dumped: dict = {}
    names: list = []
    clips = batches = samples = padded_samples = frames = padded_frames = 0
    first_batch = cpu = clock = None
    for batch in loader:
        if first_batch is None:
            first_batch = time.perf_counter() - started
            cpu, clock = tree_cpu(), time.perf_counter()
            first_clips, first_samples = len(batch["lengths"]), int(batch["lengths"].sum())
        view = batch_view(args.tool, batch)
        batches += 1
        clips += len(view["lengths"])
        samples += int(view["lengths"].sum())
        padded_samples += len(view["lengths"]) * view["width"]
        frames += int(view["frame_lengths"].sum())
        padded_frames += len(view["lengths"]) * view["frames"]
        names += view["names"]
        for row, name in enumerate(view["names"]):
            if name in wanted:
                dumped[name] = batch["features"][row, : view["frame_lengths"][row]].numpy()
    seconds = time.perf_counter() - clock
    cpu = tree_cpu() - cpu
    timed_clips, timed_audio = clips - first_clips, (samples - first_samples) / RATE
    if dataset is not None:  # named after the clock stopped
        dumped = dict(zip(mixplane_names(dataset, list(dumped)), dumped.values(), strict=True))
        names = mixplane_names(dataset, names)
    if args.dump:
        np.savez(args.dump[1], **{name.replace("/", "|"): a for name, a in dumped.items()})
    result = {
        "tool": args.tool,
        "workers": args.workers,
        "batches": batches,
        "clips": clips,
        "distinct_clips": len(set(names)),
        "names_sha256": hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest(),
        "mean_clips_per_batch": clips / batches,
        "audio_seconds": samples / RATE,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "clips_per_s": timed_clips / seconds,
        "audio_seconds_per_s": timed_audio / seconds,
        "audio_seconds_per_cpu_s": timed_audio / cpu,
        "first_batch_s": first_batch,
        "padding_waste_samples": (padded_samples - samples) / samples,
        "padding_waste_frames": (padded_frames - frames) / frames,
    }
    print(json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # do not wait for the workers' orderly shutdown: nothing is measured there


if __name__ == "__main__":
    main()
