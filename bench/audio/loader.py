"""Audio loader benchmark: one epoch of log-mel batches from the same audio shards,
mixplane's `AudioTextDataset` (duration-bucketed, `LogMel` features) against a plain
webdataset + torchaudio pipeline (fixed-size batches padded to their longest clip), side by
side in the same run.

The data (`speech_shards.py`, kept under `--work`): `--clips` espeak-ng clips of log-normal
durations (1-20 s, median 5 s) in five languages, written by `mixplane process` as 16 kHz
FLAC audio shards. What each tool runs is in `loader_runners.py`; the peer runs in its own
venv (`bench/.venvs/torchaudio`: torch 2.9.1, torchaudio 2.9.1, torchcodec 0.8.1), mixplane
in the project's.

Equal work, checked before the figures are written:
- both deliver every clip of the shards exactly once (the sorted shard/key names of every
  run hash the same);
- both compute the same features: a sample of clips' log-mels, as the batches delivered
  them, agree within `TOLERANCE` (max abs difference of the natural-log values; the
  figure over the values within 60 dB of each clip's loudest is reported too);
- ours batches by `batch_seconds` chosen so that its mean clips per batch is the closest to
  the peer's `--batch` (both are reported);
- same worker count, one thread per process (torch and BLAS), the same timing window
  (first batch to last; the clips of the first batch are not counted), CPU seconds of the
  process and its workers over that window, and of the whole process tree over the whole
  run (`bench.measure`, with the peak memory of the tree);
- paired rounds: each round runs both, in an order that alternates, medians over rounds and
  per-round ratios (median, range, 95% interval).

Padding waste: padded samples / real samples of the (B, T) audio over the epoch (the same
ratio for feature frames is in the results).

    python bench/audio/loader.py --work bench/data/audio-loader            # 2000 clips, 3 rounds
    python bench/audio/loader.py --work /tmp/audio --clips 300 --rounds 1  # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

from bench.audio.speech_shards import prepare  # noqa: E402
from bench.measure import measure, paired_ratios, rotated, spread  # noqa: E402
from bench.peer_venv import ensure_venv  # noqa: E402

TOOLS = ["mixplane", "webdataset"]
PEER_PACKAGES = [
    "torch==2.9.1", "torchaudio==2.9.1", "torchcodec==0.8.1", "webdataset", "soundfile",
]  # fmt: skip
# Natural-log units. torch's float32 FFT against LogMel's float64 one: the largest
# differences (~2e-3) are in bins 80 to 90 dB below their frame's loudest, where float32
# rounding of the transform is a visible share of the power; within 60 dB of the clip's
# loudest value they are ~1e-4 (reported apart).
TOLERANCE = 5e-3
WITHIN_60_DB = 6 * np.log(10)  # a power ratio of 1e6 in log units
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
FFMPEG_HINT = (
    "torchaudio 2.9 decodes through torchcodec, which needs FFmpeg's shared libraries "
    "(major versions 4 to 7): on Debian 12 `apt-get install -y libavutil57 libavcodec59 "
    "libavformat59 libavdevice59 libavfilter8 libswscale6 libswresample4` (or `apt-get "
    "install -y ffmpeg`, which brings them)"
)


def peer_python() -> str:
    """The peer venv's python, after checking that torchaudio can decode."""
    python = ensure_venv("torchaudio", PEER_PACKAGES)
    probe = "from torchcodec.decoders import AudioDecoder"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{FFMPEG_HINT}\n{done.stderr.strip().splitlines()[-1]}")
    return python


def budget_for(folder: Path, batch: int) -> tuple[float, float]:
    """The `batch_seconds` (whole seconds) whose planned epoch has the mean clips per batch
    closest to `batch`, and that mean."""
    from mixplane.load.audio import AudioTextDataset

    shards = str(folder / "shards")
    clips = AudioTextDataset(shards, batch_size=1, seed=1234)
    mean_seconds = float(np.mean(np.concatenate(clips.frames))) / 16000
    longest = float(np.max(np.concatenate(clips.frames))) / 16000
    best = None
    start = max(int(np.ceil(longest)), int(batch * mean_seconds * 0.9))
    for budget in range(start, int(batch * mean_seconds * 1.3) + 2):
        dataset = AudioTextDataset(shards, batch_seconds=budget, seed=1234)
        mean = dataset.epoch_length / len(dataset)
        if best is None or abs(mean - batch) < abs(best[1] - batch):
            best = (float(budget), mean)
    return best


def run_tool(tool: str, python: str, folder: Path, args, budget: float, dump=None) -> dict:
    command = [python, str(BENCH / "loader_runners.py"), tool, str(folder)]
    command += ["--workers", str(args.workers), "--batch", str(args.batch)]
    command += ["--batch-seconds", str(budget)]
    if dump is not None:
        command += ["--dump", *dump]
    env = os.environ | ONE_THREAD | {"PYTHONWARNINGS": "ignore"}
    if tool == "mixplane":
        env["PYTHONPATH"] = str(ROOT / "src")
    done = measure(command, env=env, tree_cpu=True)
    if done.returncode != 0:
        raise SystemExit(f"{tool} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["peak_rss_mb"] = round(done.peak_rss_mb, 1)
    result["process_seconds"] = round(done.seconds, 2)
    result["process_tree_cpu_seconds"] = round(done.cpu_seconds, 2)
    return result


def check_features(python: str, folder: Path, args, budget: float, clips: int) -> dict:
    """Untimed runs of both tools keeping the features of every `stride`-th clip (by
    name); the max abs difference of the log values between the two."""
    import pyarrow.parquet as pq

    names = []
    for meta in sorted((folder / "shards").glob("*.meta.parquet")):
        stem = meta.name.removesuffix(".meta.parquet")
        keys = pq.read_table(meta, columns=["key"]).column("key").to_pylist()
        names += [f"{stem}.tar/{key}" for key in keys]
    chosen = names[:: max(1, len(names) // clips)][:clips]
    keys_file = folder / "check-keys.json"
    keys_file.write_text(json.dumps(chosen))
    features = {}
    for tool in TOOLS:
        out = folder / f"check-{tool}.npz"
        run_tool(tool, python if tool == "webdataset" else sys.executable, folder, args,
                 budget, dump=(str(keys_file), str(out)))  # fmt: skip
        with np.load(out) as saved:
            features[tool] = {name.replace("|", "/"): saved[name] for name in saved.files}
    missing = [n for n in chosen if any(n not in features[t] for t in TOOLS)]
    if missing:
        raise SystemExit(f"features check: clips not delivered by both tools: {missing[:5]}")
    differences, loud = [], []
    for name in chosen:
        ours, peer = features["mixplane"][name], features["webdataset"][name]
        if ours.shape != peer.shape:
            raise SystemExit(f"features check: {name}: {ours.shape} against {peer.shape}")
        difference = np.abs(ours.astype(np.float64) - peer)
        differences.append(difference.reshape(-1))
        loud.append(difference[peer >= peer.max() - WITHIN_60_DB])
    every = np.concatenate(differences)
    result = {
        "clips": len(chosen),
        "values": int(every.size),
        "max_abs_difference": float(every.max()),
        "max_abs_difference_within_60_db": float(np.concatenate(loud).max()),
        "p99_9_abs_difference": float(np.quantile(every, 0.999)),
        "median_abs_difference": float(np.median(every)),
        "tolerance": TOLERANCE,
    }
    if result["max_abs_difference"] > TOLERANCE:
        raise SystemExit(f"features differ beyond {TOLERANCE}: {result}")
    return result


def check_equal_work(runs: dict[str, list[dict]], clips: int) -> dict:
    """Every run delivered each of the `clips` clips once, and the same ones."""
    digests = {r["names_sha256"] for results in runs.values() for r in results}
    for tool, results in runs.items():
        for r in results:
            if r["clips"] != clips or r["distinct_clips"] != clips:
                raise SystemExit(f"{tool} delivered {r['clips']} clips ({r['distinct_clips']} "
                                 f"distinct) of {clips}")  # fmt: skip
    if len(digests) != 1:
        raise SystemExit(f"the tools delivered different clips: {sorted(digests)}")
    return {"clips_each_run": clips, "same_clips_in_every_run": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="folder for the shards (made once)")
    parser.add_argument("--clips", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=32, help="the peer's clips per batch")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--check-clips", type=int, default=24)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "audio-loader.json"))
    args = parser.parse_args()
    started = time.perf_counter()
    python = peer_python()
    folder = prepare(Path(args.work), args.clips)
    data = json.loads((folder / "ready.json").read_text())
    budget, planned_mean = budget_for(folder, args.batch)
    print(f"data {data}; batch_seconds {budget} (planned {planned_mean:.2f} clips a batch)")
    for path in sorted((folder / "shards").glob("*.tar")):  # into the page cache, untimed
        path.read_bytes()
    features = check_features(python, folder, args, budget, args.check_clips)
    print(json.dumps({"features_check": features}), flush=True)
    runs: dict[str, list[dict]] = {tool: [] for tool in TOOLS}
    for round_number in range(args.rounds):
        for tool in rotated(TOOLS, round_number):
            result = run_tool(tool, python if tool == "webdataset" else sys.executable,
                              folder, args, budget)  # fmt: skip
            runs[tool].append(result)
            print(
                f"round {round_number} {tool:10s}: {result['clips_per_s']:6.1f} clips/s, "
                f"{result['audio_seconds_per_s']:7.1f} audio s/s, "
                f"{result['audio_seconds_per_cpu_s']:7.1f} per CPU s, "
                f"padding {result['padding_waste_samples']:.3f}, "
                f"{result['mean_clips_per_batch']:.2f} clips/batch, "
                f"peak {result['peak_rss_mb']:.0f} MB",
                flush=True,
            )
    equal = check_equal_work(runs, data["clips"])
    names = ("clips_per_s", "audio_seconds_per_s", "audio_seconds_per_cpu_s", "seconds",
             "cpu_seconds", "process_tree_cpu_seconds", "process_seconds", "first_batch_s",
             "peak_rss_mb", "padding_waste_samples", "padding_waste_frames",
             "mean_clips_per_batch", "batches")  # fmt: skip
    summary = {tool: {name: spread([r[name] for r in results], 4) for name in names}
               for tool, results in runs.items()}  # fmt: skip
    ratios = {}
    for name in ("clips_per_s", "audio_seconds_per_s", "audio_seconds_per_cpu_s"):
        rounds = [{tool: runs[tool][i][name] for tool in TOOLS} for i in range(args.rounds)]
        ratios[f"{name}: mixplane / webdataset"] = paired_ratios(rounds, "mixplane", "webdataset")
    command = ["python", "bench/audio/loader.py", "--work", "WORK"]
    for flag in ("clips", "batch", "workers", "rounds", "check_clips"):
        if getattr(args, flag) != parser.get_default(flag):
            command += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    report = {
        "benchmark": "audio-loader",
        "command": " ".join(command),
        "data": data,
        "features": {
            "sample_rate": 16000,
            "n_fft": 400,
            "hop_length": 160,
            "n_mels": 80,
            "window": "periodic Hann",
            "mel_scale": "htk",
            "norm": None,
            "log": "natural, floor 1e-10",
        },  # fmt: skip
        "peer_batch": args.batch,
        "mixplane_batch_seconds": budget,
        "workers": args.workers,
        "rounds": args.rounds,
        "peer_versions": PEER_PACKAGES,
        "features_check": features,
        "equal_work": equal,
        "minutes": round((time.perf_counter() - started) / 60, 1),
        "load_average_at_end": os.getloadavg(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "summary": summary,
        "paired_ratios": ratios,
        "runs": runs,
    }
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({"ratios": ratios}, indent=2))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
