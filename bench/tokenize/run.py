"""Tokenize throughput: mixplane vs the raw `tokenizers` loop vs datatrove, same run.

    .venv/bin/python bench/tokenize/run.py --megabytes 20 --files 2 --repeats 15

Every tool tokenizes the same Parquet files with the same byte-level BPE (trained here on the
corpus), single-threaded (TOKENIZERS_PARALLELISM=false), one worker. Tokens per second per
core is the text's tokens (EOS not counted, so every tool is credited the same work) / CPU
seconds of the timed work (all threads counted). The raw loop only encodes texts already in
memory: it is the limit. mixplane and datatrove also read Parquet, add EOS and write their
files.

One untimed warm-up run of every tool comes first (page cache, imports). Then the tools run
in `--repeats` interleaved rounds: every tool once per round, in an order that rotates from
round to round. Each tool's median and range are reported, and ratios are paired per round
(two tools measured at the same moment of the machine): their median, range and a 95%
confidence interval, a t-interval on the logs of the per-round ratios (symmetric in ratio
terms). `--workers 2` adds a wall-clock run of mixplane and datatrove with two worker
processes.

Each runner also reports the CPU time spent inside the library's encode call;
`cpu_share_in_encode` (encode CPU / all CPU, within one run) shows each tool's overhead
around the same library call independently of drift between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from corpus import write_corpus  # noqa: E402
from measure import paired_ratios, rotated, spread  # noqa: E402
from peer_venv import ensure_venv  # noqa: E402

from mixplane.store import TokenizedDataset  # noqa: E402
from mixplane.tokenize import train_tokenizer  # noqa: E402

ENV = os.environ | {"TOKENIZERS_PARALLELISM": "false", "RAYON_NUM_THREADS": "1"}


def run_json(command: list[str]) -> dict:
    done = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=7200)
    if done.returncode != 0:
        raise SystemExit(f"{command[1]} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def prepare(args) -> tuple[Path, Path, dict]:
    data = Path(args.data) / f"{args.megabytes}mb-{args.files}"
    stamp = data / "corpus.json"
    if not stamp.exists():
        print(f"writing corpus to {data}", file=sys.stderr)
        shutil.rmtree(data, ignore_errors=True)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        summary = write_corpus(data / "parts", args.megabytes, args.files)
        stamp.write_text(json.dumps(summary))
    tokenizer = data / f"tokenizer-{args.vocab_size}.json"
    if not tokenizer.exists():
        print(f"training a {args.vocab_size}-entry BPE", file=sys.stderr)
        train_tokenizer(
            str(data / "parts"), args.vocab_size, str(tokenizer), max_documents=args.train_docs
        )
    return data / "parts", tokenizer, json.loads(stamp.read_text())


def same_tokens(mixplane_out: Path, datatrove_files: list[str]) -> bool:
    """datatrove's unshuffled files hold the same tokens as mixplane's shards, file by file."""
    dataset = TokenizedDataset(mixplane_out)
    ours = np.concatenate([np.asarray(dataset.shard(i).tokens) for i in range(len(dataset.shards))])
    theirs = np.concatenate([np.fromfile(path, dtype="<u2") for path in datatrove_files])
    return bool(np.array_equal(ours, theirs))


def commands(python: str, datatrove: str | None, tokenizer: Path, parts: Path, batch: int):
    """How to run each tool: a function of (output folder, workers) giving the command."""

    def raw(method: str):
        script = str(HERE / "raw_runner.py")
        return lambda out, workers: [python, script, str(tokenizer), str(parts), str(batch), method]

    def tool(interpreter: str, script: str):
        script = str(HERE / script)
        return lambda out, workers: [
            interpreter,
            script,
            str(tokenizer),
            str(parts),
            str(out),
            str(batch),
            str(workers),
        ]

    tools = {
        "raw encode_batch_fast": raw("encode_batch_fast"),
        "raw encode_batch": raw("encode_batch"),
        "mixplane": tool(python, "mixplane_runner.py"),
    }
    if datatrove is not None:
        tools["datatrove"] = tool(datatrove, "datatrove_runner.py")
    return tools


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=float, default=20.0, help="text in the corpus")
    parser.add_argument("--files", type=int, default=2)
    parser.add_argument("--vocab-size", type=int, default=32_000)
    parser.add_argument("--train-docs", type=int, default=3000)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--workers", type=int, nargs="*", default=[])
    parser.add_argument("--no-datatrove", action="store_true")
    parser.add_argument("--data", default=str(HERE.parent / "data" / "tokenize"))
    parser.add_argument("--out", default=str(HERE.parent / "results" / "tokenize.json"))
    args = parser.parse_args()

    parts, tokenizer, corpus = prepare(args)
    datatrove = None
    if not args.no_datatrove:
        datatrove = ensure_venv("datatrove", ["datatrove[io]", "tokenizers"])
    tools = commands(sys.executable, datatrove, tokenizer, parts, args.batch_size)
    runs: dict[str, list[dict]] = {}
    scaling: dict[str, dict] = {}
    check = None
    with tempfile.TemporaryDirectory(prefix="bench-tokenize-") as scratch:
        for name, command in tools.items():  # warm-up, untimed
            out = Path(scratch) / f"warm-{name.replace(' ', '-')}"
            run_json(command(out, 1))
            shutil.rmtree(out, ignore_errors=True)
        for repeat in range(args.repeats):
            outputs = {}
            for name in rotated(list(tools), repeat):
                command = tools[name]
                outputs[name] = Path(scratch) / f"{name.replace(' ', '-')}-{repeat}"
                result = run_json(command(outputs[name], 1))
                if name == "datatrove" and check is None:
                    check = same_tokens(outputs["mixplane"], result["files"])
                result.pop("files", None)
                # mixplane and datatrove add one EOS per document; the raw loop does not.
                eos = result["documents"] if not name.startswith("raw") else 0
                result["text_tokens"] = result["tokens"] - eos
                result["tokens_per_cpu_second"] = result["text_tokens"] / result["cpu_seconds"]
                result["tokens_per_wall_second"] = result["text_tokens"] / result["wall_seconds"]
                runs.setdefault(name, []).append(result)
                share = result["encode_cpu_seconds"] / result["cpu_seconds"]
                print(
                    f"{repeat:>2} {name:>22}: {result['tokens_per_cpu_second']:>12,.0f} "
                    f"tokens/s/core, {share:.1%} of CPU in encode "
                    f"({result['wall_seconds']:.2f} s wall)",
                    file=sys.stderr,
                )
            for out in outputs.values():
                shutil.rmtree(out, ignore_errors=True)
        for workers in args.workers:
            for name in ("mixplane", "datatrove"):
                if name not in tools:
                    continue
                out = Path(scratch) / f"{name}-x{workers}"
                result = run_json(tools[name](out, workers))
                scaling[f"{name} x{workers}"] = {
                    "wall_seconds": round(result["wall_seconds"], 3),
                    "tokens_per_second": round(result["tokens"] / result["wall_seconds"]),
                }
                shutil.rmtree(out, ignore_errors=True)

    text_tokens = {r["text_tokens"] for results in runs.values() for r in results}
    if len(text_tokens) != 1:
        raise SystemExit(f"the tools did not tokenize the same text: {sorted(text_tokens)}")
    shares = {
        name: float(np.median([r["encode_cpu_seconds"] / r["cpu_seconds"] for r in results]))
        for name, results in runs.items()
    }

    def rounds_of(figure: str) -> list[dict[str, float]]:
        return [
            {name: results[i][figure] for name, results in runs.items()}
            for i in range(args.repeats)
        ]

    pairs = [("mixplane", "raw encode_batch_fast"), ("mixplane", "raw encode_batch")]
    if "datatrove" in runs:
        pairs += [
            ("mixplane", "datatrove"),
            ("datatrove", "raw encode_batch_fast"),
            ("datatrove", "raw encode_batch"),
        ]
    report = {
        "corpus": corpus | {"files": args.files, "vocab_size": args.vocab_size},
        "text_tokens": text_tokens.pop(),
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "order": [rotated(list(tools), i) for i in range(args.repeats)],
        "tools": {
            name: {
                "tokens_per_cpu_second": spread([r["tokens_per_cpu_second"] for r in rs], 0),
                "cpu_seconds": spread([r["cpu_seconds"] for r in rs]),
                "wall_seconds": spread([r["wall_seconds"] for r in rs]),
                "tokens_written": rs[0]["tokens"],
                "documents": rs[0]["documents"],
            }
            for name, rs in runs.items()
        },
        "paired_ratios": {
            f"{a} / {b}": paired_ratios(rounds_of("tokens_per_cpu_second"), a, b) for a, b in pairs
        },
        "paired_ratios_wall": {
            f"{a} / {b}": paired_ratios(rounds_of("tokens_per_wall_second"), a, b) for a, b in pairs
        },
        "cpu_share_in_encode": {name: round(share, 4) for name, share in shares.items()},
        "same_tokens_as_datatrove": check,
        "scaling": scaling,
    }
    # Drift-free estimates: a tool's share of CPU in encode over the raw loop's, for the same
    # library call (mixplane calls encode_batch_fast, datatrove encode_batch).
    robust = {"mixplane": shares["mixplane"] / shares["raw encode_batch_fast"]}
    if "datatrove" in runs:
        robust["datatrove"] = shares["datatrove"] / shares["raw encode_batch"]
        report["mixplane_vs_datatrove_by_encode_share"] = round(
            robust["mixplane"] / robust["datatrove"], 3
        )
    report["share_of_limit_by_encode_share"] = {k: round(v, 3) for k, v in robust.items()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
