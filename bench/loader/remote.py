"""Remote loader benchmark: the three-component mixture read from object storage over a slow,
narrow link, mixplane and MosaicML streaming in the same run.

An S3 server on loopback holds the data for both tools (s3rver, from npm, installed under
bench/.venvs/s3rver on first use; or with `--server moto` moto's server, which reads the whole
object for every ranged GET, under a lock per object, so each of a batch's dozens of small
ranged reads costs tens of milliseconds of its time): mixplane's
datasets wiki, code and web (written as data.py writes them, in shards of `--shard-mb`; web's
shards one language each, as `tokenize --group-by language` writes them, or with `--layout
mixed` the four languages interleaved in every shard, so web_de reads a quarter of each) with
their catalog, and MDS shards of the same size holding each component's packed 2048-token
sequences (wiki, code, web_de: one pass over its documents) for MosaicML. Every request goes
through a `FlakyProxy` in this process that adds
`--latency` seconds per request and limits all bodies together to `--bandwidth` bytes/s.
Both tools get the same cache limit, a quarter of mixplane's shards, and shuffle a few shards
at a time (mixplane `shuffle_window: 1`: two windows per component fit the cache; MosaicML
`shuffle_block_size` of three shards' samples, since its default block spans the whole data
and would re-download shards all the time).

Tools, each measurement a fresh process with an empty cache folder (for mixplane an empty plan
cache too, so its first batch includes copying the catalog and planning):
- `mixplane`: `MixtureDataset(spec, prefetch=2)` through `torch_loader`, batches of 8;
- `ranges`: the same with `cache: ranges` (only the checksum units of the pieces read are
  fetched; the cache holds the `.sums` files);
- `mosaic`: `StreamingDataset` over three remote `Stream`s (bench/.venvs/streaming);
- `local`: mixplane over the same shards on local disk (the local figure);
- `local-loaded`: `local` again, right after the round's `mixplane` run, beside a process
  that keeps as much CPU busy as the S3 server and the proxy used while `mixplane` was
  timed: on a machine of few cores they run beside the loader, where real object storage
  would not;
- `wire`: the shards fetched through the proxy in 16 MB ranged GETs, 4 at a time, as
  mixplane's cache does (what the link delivers on this machine).

Figures per run: time to first batch (cold), steady sequences/s over `--batches` batches after
`--warmup`, bytes through the proxy per byte handed to the loop over that steady window (and
over the whole run), peak bytes in the cache folder and in the part the limit governs (sampled
every 50 ms). Every tool runs once per round and worker count, in an order that rotates;
ratios are paired within a round. Goals: first batch < 2 s cold; steady MB/s >= 90% of the
lower of the bandwidth and the local figure; >= 2x MosaicML; range mode at most 1.25 bytes
through the link per byte read. Results go to
bench/results/loader-remote.json; the data (about 2 GB on disk) to bench/data/loader-remote.

    python bench/loader/remote.py            # 5e8 tokens (1 GB), workers 0 and 2, 3 rounds
    python bench/loader/remote.py --tokens 3e7 --shard-mb 2 --cache-fraction 0.5 \
        --batches 600 --warmup 100 --rounds 1                     # quick check (1 minute)
    python bench/loader/remote.py --tools mixplane --workers 0 --tokens 1.5e9 --shard-mb 256 \
        --cache-fraction 0.6 --batches 200 --warmup 0 [--ranged-opening-bytes 1e12]
                        # first batch over 256 MB shards: by ranges, or waiting for shards
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from consume import add_run_options, consume, report  # noqa: E402
from data import SHARES, WEIGHTS, dataset_settings, mixture_spec  # noqa: E402

from bench.measure import measure, paired_ratios, rotated, spread  # noqa: E402
from bench.peer_venv import ensure_node_packages, ensure_venv  # noqa: E402

TOOLS = ("mixplane", "ranges", "mosaic", "local", "local-loaded", "wire")
MOSAIC_PACKAGES = ["torch==2.13.0", "mosaicml-streaming"]  # the local benchmark's venv
S3RVER_PACKAGES = ["s3rver@3.7.1"]
BUCKET = "bench"
# s3rver's fixed key pair (moto takes any).
CREDENTIALS = {"key": "S3RVER", "secret": "S3RVER", "client_kwargs": {"region_name": "us-east-1"}}
RESULT = ROOT / "bench" / "results" / "loader-remote.json"
GAP_ENV = "MIXPLANE_RANGE_GAP"  # range mode: join pieces this many bytes apart
OPENING_ENV = "BENCH_RANGED_OPENING_BYTES"  # the runner's RANGED_OPENING_BYTES


# -- data ------------------------------------------------------------------------------------


def prepare(folder: Path, tokens: int, seq_len: int, shard_bytes: int, layout: str) -> dict:
    """mixplane's datasets and local catalog, and each component's packed sequences (for the
    MDS shards); built once under `folder` and reused while the sizes match.

    Layout `grouped` writes web's shards one language each (`tokenize --group-by language`),
    `mixed` with the four languages interleaved in every shard."""
    import numpy as np

    from mixplane.load import MixtureDataset
    from mixplane.load.tools.synthetic import write_catalog

    stamp = folder / "_bench.json"
    # format 2: shards with range checksums (.sums)
    wanted = {"tokens": tokens, "seq_len": seq_len, "shard_bytes": shard_bytes, "format": 2}
    wanted["layout"] = layout
    if stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return json.loads((folder / "_prepared.json").read_text())
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    started = time.perf_counter()
    datasets = dataset_settings(tokens, shard_bytes=shard_bytes)
    if layout == "grouped":
        datasets["web"]["group_by"] = "language"
    catalog = folder / "catalog.duckdb"
    write_catalog(str(folder), datasets, catalog=str(catalog))
    prepared = {"generate_seconds": round(time.perf_counter() - started, 1), "sequences": {}}
    spec = mixture_spec(catalog, seq_len) | {"cache_dir": str(folder / "cache")}
    (folder / "packed").mkdir()
    for name, component in spec["components"].items():
        alone = spec | {"components": {name: component | {"weight": 1}}}
        dataset = MixtureDataset(alone, dtype="uint16", boundaries="none")
        count = int(dataset.resolved.lengths[0].sum()) // seq_len
        packed = dataset.read_positions(np.arange(count))["input_ids"]
        np.save(folder / "packed" / f"{name}.npy", packed)
        prepared["sequences"][name] = count
    shutil.rmtree(folder / "cache")
    prepared["shard_bytes"] = {
        name: sum(p.stat().st_size for p in (folder / name).glob("*.bin")) for name in SHARES
    }
    (folder / "_prepared.json").write_text(json.dumps(prepared))
    stamp.write_text(json.dumps(wanted))
    return prepared


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_s3(kind: str, folder: Path) -> tuple[subprocess.Popen, str]:
    """An S3 server on loopback in its own process: s3rver (objects as files in a fresh
    `folder/s3rver`) or moto (objects in memory)."""
    port = free_port()
    env = os.environ.copy()
    if kind == "s3rver":
        modules = ensure_node_packages("s3rver", S3RVER_PACKAGES)
        directory = folder / "s3rver"
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        env["NODE_PATH"] = str(modules / "node_modules")
        command = ["node", str(BENCH / "s3rver_serve.js"), str(port), str(directory)]
    else:
        env["MOTO_S3_DEFAULT_KEY_BUFFER_SIZE"] = str(1 << 31)
        command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    server = subprocess.Popen(command, env=env, **quiet)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise RuntimeError(f"the {kind} S3 server did not start")


def upload(folder: Path, endpoint: str) -> str:
    """Put mixplane's datasets and the MDS folders on the server (directly, not through the
    proxy), register the datasets under their s3 URLs; returns the remote catalog's URL."""
    import s3fs

    from mixplane.catalog import Catalog

    options = {"endpoint_url": endpoint, **CREDENTIALS}
    fs = s3fs.S3FileSystem(**options, skip_instance_cache=True)
    fs.call_s3("create_bucket", Bucket=BUCKET)
    for local, remote in [(folder / n, f"tokens/{n}") for n in SHARES] + [
        (folder / "mds" / n, f"mds/{n}") for n in WEIGHTS
    ]:
        for path in sorted(local.rglob("*")):
            if path.is_file():
                fs.put_file(str(path), f"{BUCKET}/{remote}/{path.relative_to(local)}")
    catalog = folder / "remote.duckdb"
    catalog.unlink(missing_ok=True)
    registry = Catalog(str(catalog), storage_options=options)
    for name in SHARES:
        registry.register(f"s3://{BUCKET}/tokens/{name}", name=name)
    fs.put_file(str(catalog), f"{BUCKET}/catalog.duckdb")
    return f"s3://{BUCKET}/catalog.duckdb"


# -- measuring -------------------------------------------------------------------------------


def folder_bytes(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(FileNotFoundError):  # evicted while we looked
                total += os.stat(os.path.join(root, name)).st_size
    return total


def cpu_seconds(server_pid: int) -> tuple[float, float, float]:
    """CPU seconds used so far by the whole machine (all cores), the S3 server and this
    process (the proxy): where the cores go while a tool reads."""
    tick = os.sysconf("SC_CLK_TCK")
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    idle = int(fields[3]) + int(fields[4])  # idle + iowait
    machine = (sum(int(x) for x in fields[:8]) - idle) / tick
    server = Path(f"/proc/{server_pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = os.times()
    return machine, (int(server[11]) + int(server[12])) / tick, own.user + own.system


class Sampler:
    """Every 50 ms: wall time, bytes the proxy has sent, bytes in the cache folder and in its
    part that the limit governs (`shards`: mixplane's shard files, MosaicML's whole folder),
    and CPU seconds so far (machine, S3 server, proxy)."""

    def __init__(self, proxy, cache: Path, shards: Path, server_pid: int):
        self.proxy, self.cache, self.shards, self.samples = proxy, cache, shards, []
        self.server_pid = server_pid
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            self.take()
            time.sleep(0.05)

    def take(self) -> None:
        sent = self.proxy.counters["bytes"]
        sizes = folder_bytes(self.cache), folder_bytes(self.shards)
        self.samples.append((time.time(), sent, *sizes, *cpu_seconds(self.server_pid)))

    def __enter__(self) -> Sampler:
        self.take()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.take()

    def peak_mb(self, column: int) -> float:
        return max(sample[column] for sample in self.samples) / 1e6

    def between(self, column: int, start: float, end: float) -> float:
        """How much a counter column grew from `start` to `end` (interpolated)."""
        import numpy as np

        times, counts = (np.array([x[i] for x in self.samples], dtype=float) for i in (0, column))
        return float(np.interp(end, times, counts) - np.interp(start, times, counts))

    def cores(self, start: float, end: float) -> dict[str, float]:
        """Cores busy on average from `start` to `end`: the machine, the S3 server, the proxy,
        and the rest (the tool and whatever else runs)."""
        machine, server, proxy = (self.between(c, start, end) / (end - start) for c in (4, 5, 6))
        rest = machine - server - proxy
        return {"machine": machine, "server": server, "proxy": proxy, "rest": rest}


def command_for(tool: str, workers: int, run_dir: Path, setup: dict, args) -> tuple[list, dict]:
    """The command line and environment of one measured run."""
    options = ["--workers", str(workers), "--batch", str(args.batch), "--seq-len"]
    options += [str(args.seq_len), "--batches", str(args.batches), "--warmup", str(args.warmup)]
    env = os.environ | {"PYTHONWARNINGS": "ignore"}
    if args.ranged_opening_bytes is not None:
        env[OPENING_ENV] = str(args.ranged_opening_bytes)
    cache = run_dir / "cache"
    if tool == "mosaic":
        env |= {
            "S3_ENDPOINT_URL": setup["proxy"],
            "AWS_ACCESS_KEY_ID": CREDENTIALS["key"],
            "AWS_SECRET_ACCESS_KEY": CREDENTIALS["secret"],
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        options += ["--remote", f"s3://{BUCKET}/mds", "--cache-limit", str(setup["cache_limit"])]
        options += ["--shuffle-block", str(setup["shuffle_block"])]
        runner = [setup["mosaic_python"], str(BENCH / "mosaic_remote_runner.py"), "run"]
        return [*runner, str(cache), *options], env
    storage = {"endpoint_url": setup["proxy"], **CREDENTIALS}
    spec = mixture_spec(setup["folder"] / "catalog.duckdb", args.seq_len)
    spec |= {"cache_dir": str(cache), "shuffle_window": args.shuffle_window}
    if tool in ("mixplane", "ranges"):  # else local (and local-loaded)
        spec |= {"catalog": setup["catalog"], "storage_options": storage}
        spec |= {"cache_limit": setup["cache_limit"]}
    if tool == "ranges":
        spec["cache"] = "ranges"
    if tool == "wire":
        spec = {"storage_options": storage, "bytes": setup["cache_limit"] * 2}
    (run_dir / "spec.json").write_text(json.dumps(spec))
    runner = [sys.executable, str(Path(__file__).resolve()), "run", tool]
    return [*runner, str(run_dir / "spec.json"), *options], env


@contextlib.contextmanager
def cpu_load(cores: float):
    """Keep about `cores` of CPU busy while the block runs (one process per started core,
    each spinning for its share of every 10 ms of its own CPU time); yields a dict that
    gets `used`, the cores its processes used on average."""
    shares = [min(1.0, cores - whole) for whole in range(int(-(-cores // 1)))]
    loop = (
        "import sys, time\nshare = float(sys.argv[1])\nwhile True:\n"
        "    start = time.thread_time()\n"
        "    while time.thread_time() - start < share * 0.01: pass\n"
        "    time.sleep((1 - share) * 0.01)\n"
    )
    burners = [subprocess.Popen([sys.executable, "-c", loop, str(x)]) for x in shares if x > 0]
    started, out = time.perf_counter(), {"used": 0.0}
    try:
        yield out
    finally:
        tick = os.sysconf("SC_CLK_TCK")
        for burner in burners:
            fields = Path(f"/proc/{burner.pid}/stat").read_text().rsplit(")", 1)[1].split()
            out["used"] += (int(fields[11]) + int(fields[12])) / tick
            burner.kill()
            burner.wait()
        out["used"] /= time.perf_counter() - started


def run_tool(tool: str, workers: int, setup: dict, args, proxy, load: float = 0.0) -> dict:
    """One measurement in a fresh process, with an empty cache folder (`load`: cores kept
    busy beside it)."""
    run_dir = setup["folder"] / "runs" / tool
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    command, env = command_for(tool, workers, run_dir, setup, args)
    cache = run_dir / "cache"
    before = proxy.counters["bytes"]
    shards = cache / "shards" if tool in ("mixplane", "ranges") else cache
    with cpu_load(load) as loaded, Sampler(proxy, cache, shards, setup["server_pid"]) as sampler:
        done = measure(command, env=env)
    shutil.rmtree(run_dir, ignore_errors=True)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"{tool} with {workers} workers failed:\n{done.stderr[-3000:]}")
    result = json.loads(line[len("RESULT ") :]) | {"peak_rss_mb": round(done.peak_rss_mb, 1)}
    if load:
        result["load_cores"], result["load_cores_used"] = load, round(loaded["used"], 3)
    if tool == "wire":
        result["cores"] = sampler.cores(result["end"] - result["seconds"], result["end"])
    if tool not in ("mixplane", "ranges", "mosaic"):
        return result
    result["proxy_mb"] = (proxy.counters["bytes"] - before) / 1e6
    result["peak_cache_mb"], result["peak_shards_mb"] = sampler.peak_mb(2), sampler.peak_mb(3)
    # Bytes through the link while the clock ran, per byte handed to the loop.
    start = result["steady_end"] - result["steady_seconds"]
    sent = sampler.between(1, start, result["steady_end"])
    result["cores"] = sampler.cores(start, result["steady_end"])
    result["link_mb_per_second"] = sent / 1e6 / result["steady_seconds"]
    result["bytes_per_byte_steady"] = sent / (args.batches * args.batch * args.seq_len * 2)
    consumed = (1 + args.warmup + args.batches) * args.batch * args.seq_len * 2
    result["bytes_per_byte_run"] = result["proxy_mb"] * 1e6 / consumed
    return result


# -- runners (fresh processes) ---------------------------------------------------------------


def runner(argv: list[str]) -> None:
    """`remote.py run TOOL SPEC_JSON ...`: one measured run of mixplane, local or wire."""
    parser = argparse.ArgumentParser()
    parser.add_argument("tool", choices=["mixplane", "ranges", "local", "local-loaded", "wire"])
    add_run_options(parser)
    args = parser.parse_args(argv)
    spec = json.loads(args.data.read_text())
    if args.tool == "wire":
        report(wire(spec["storage_options"], spec["bytes"]))
        return
    import s3fs  # noqa: F401 - libraries load before the clock, as for MosaicML
    import torch

    import mixplane.catalog  # noqa: F401
    from mixplane.load import MixtureDataset
    from mixplane.load.torch import torch_loader

    torch.set_num_threads(1)
    if OPENING_ENV in os.environ:  # compare a first batch from ranges with one from shards
        import mixplane.load.read.source

        mixplane.load.read.source.RANGED_OPENING_BYTES = int(os.environ[OPENING_ENV])
    made = {}

    def make_loader():
        made["dataset"] = MixtureDataset(spec, dtype="uint16", prefetch=2)
        return torch_loader(made["dataset"], args.batch, num_workers=args.workers)

    result = consume(make_loader, args.batches, args.warmup, args.batch, args.seq_len)
    result["steady_end"] = time.time()
    result["steady_seconds"] = args.batches * args.batch / result["samples_per_second"]
    if args.tool in ("mixplane", "ranges") and args.workers == 0:  # this process's fetches
        result["cache_stats"] = made["dataset"].source.stats()
    report(result)


def wire(storage_options: dict, total: int, chunk: int = 16 << 20, threads: int = 4) -> dict:
    """Fetch shards through the link as mixplane's cache does (16 MB ranged GETs, 4 at a
    time, plain HTTP where possible), until `total` bytes."""
    from concurrent.futures import ThreadPoolExecutor

    import s3fs

    from mixplane.io.plain_get import range_reader

    fs = s3fs.S3FileSystem(**storage_options, skip_instance_cache=True)
    ranges, planned = [], 0
    for path in sorted(fs.glob(f"{BUCKET}/tokens/*/*.bin")):
        size = fs.size(path)
        read = range_reader(f"s3://{path}", storage_options)
        ranges += [(read, start, min(size, start + chunk)) for start in range(0, size, chunk)]
        planned += size
        if planned >= total:
            break
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        got = sum(pool.map(lambda r: len(r[0](r[1], r[2])), ranges))
    seconds = time.perf_counter() - started
    return {
        "mb_per_second": got / seconds / 1e6,
        "seconds": seconds,
        "bytes": got,
        "end": time.time(),
    }


# -- the driver ------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=float, default=5e8)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--batches", type=int, default=10_000)
    # 3,000 batches (98 MB of tokens): past every component's first shard, so the timed
    # window measures the prefetch in its stride, not its ramp after the first batch.
    parser.add_argument("--warmup", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--tools", nargs="+", default=list(TOOLS), choices=TOOLS)
    parser.add_argument("--shard-mb", type=float, default=32)
    parser.add_argument("--shuffle-window", type=int, default=1)
    parser.add_argument("--cache-fraction", type=float, default=0.25)
    parser.add_argument("--server", choices=("s3rver", "moto"), default="s3rver")
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per request")
    parser.add_argument("--bandwidth", type=float, default=200e6, help="bytes per second")
    parser.add_argument(
        "--layout",
        choices=("grouped", "mixed"),
        default="grouped",
        help="web's shards one language each (tokenize --group-by language) or interleaved",
    )
    parser.add_argument(
        "--ranged-opening-bytes",
        type=lambda text: int(float(text)),
        help="read a cold first batch by ranges above this many bytes of shards (default: "
        "the loader's RANGED_OPENING_BYTES; a huge value makes it wait for whole shards)",
    )
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data" / "loader-remote")
    parser.add_argument("--result", type=Path, default=RESULT, help="where the JSON goes")
    args = parser.parse_args()

    from mixplane.io.flaky_proxy import Faults, FlakyProxy

    tokens, shard_bytes = int(args.tokens), int(args.shard_mb * 1e6)
    folder = (args.data / f"{tokens}-{args.layout}").resolve()
    prepared = prepare(folder, tokens, args.seq_len, shard_bytes, args.layout)
    print(f"data ready in {folder}: {json.dumps(prepared)}", file=sys.stderr)
    needed = (1 + args.warmup + args.batches) * args.batch
    if needed > sum(prepared["sequences"].values()):
        raise SystemExit(f"{needed} sequences needed: raise --tokens or lower --batches")
    setup = {"folder": folder}
    setup["cache_limit"] = int(sum(prepared["shard_bytes"].values()) * args.cache_fraction)
    setup["shuffle_block"] = 3 * (shard_bytes // (args.seq_len * 2))
    if "mosaic" in args.tools:
        setup["mosaic_python"] = ensure_venv("streaming", MOSAIC_PACKAGES)
        build = [setup["mosaic_python"], str(BENCH / "mosaic_remote_runner.py"), "build"]
        built = measure([*build, str(folder), "--shard-bytes", str(shard_bytes)])
        if built.returncode != 0:
            raise RuntimeError(f"MDS build failed:\n{built.stderr[-3000:]}")

    server, endpoint = start_s3(args.server, folder)
    setup["server_pid"] = server.pid
    faults = Faults(latency=args.latency, bandwidth=args.bandwidth)
    proxy = FlakyProxy(endpoint, faults)
    try:
        started = time.perf_counter()
        setup["catalog"] = upload(folder, endpoint)
        print(f"uploaded in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        setup["proxy"] = proxy.start()
        runs: dict[str, list[dict]] = {}
        order = []
        for number in range(args.rounds):
            for workers in args.workers:
                tools = [t for t in args.tools if t != "wire" or workers == args.workers[0]]
                tools = rotated([t for t in tools if t != "local-loaded"], number)
                if "local-loaded" in args.tools and "mixplane" in tools:
                    tools.append("local-loaded")  # with the load of this round's mixplane
                order.append([f"{t}/{workers}" for t in tools])
                for tool in tools:
                    load = 0.0
                    if tool == "local-loaded":
                        cores = runs[f"mixplane/{workers}"][-1]["cores"]
                        load = round(cores["server"] + cores["proxy"], 3)
                    run = run_tool(tool, workers, setup, args, proxy, load)
                    runs.setdefault(f"{tool}/{workers}", []).append(run)
                    print(f"{tool}/{workers} #{number}: {json.dumps(run)}", file=sys.stderr)
    finally:
        proxy.stop()
        server.terminate()
        server.wait()
        shutil.rmtree(folder / "s3rver", ignore_errors=True)
    write_results(args, prepared, setup, runs, order)


def write_results(args, prepared: dict, setup: dict, runs: dict, order: list) -> None:
    keys = ("first_batch_seconds", "samples_per_second", "mb_per_second", "peak_rss_mb")
    keys += ("peak_cache_mb", "peak_shards_mb", "proxy_mb", "link_mb_per_second")
    keys += ("bytes_per_byte_steady",)
    keys += ("bytes_per_byte_run", "load_cores", "load_cores_used")
    results = {
        key: {k: spread([r[k] for r in measured]) for k in keys if k in measured[0]}
        | {"runs": measured}
        for key, measured in runs.items()
    }
    for key, measured in runs.items():
        if "cores" in measured[0]:
            names = measured[0]["cores"]
            results[key]["cores"] = {n: spread([r["cores"][n] for r in measured]) for n in names}
    ratios, goals = {}, {}
    bandwidth_mb = args.bandwidth / 1e6
    for workers in args.workers:
        measured = {
            tool: runs[f"{tool}/{workers}"] for tool in TOOLS if f"{tool}/{workers}" in runs
        }
        rounds = [
            {t: m[n]["mb_per_second"] for t, m in measured.items()} for n in range(args.rounds)
        ]
        pairs = [("mixplane", "mosaic"), ("mixplane", "local"), ("mixplane", "local-loaded")]
        for ours, other in [*pairs, ("ranges", "mosaic")]:
            if paired := paired_ratios(rounds, ours, other):
                ratios[f"{ours}/{other}/{workers}"] = paired
        if f"mixplane/{workers}" not in results:
            continue
        ours = results[f"mixplane/{workers}"]
        local = results.get(f"local/{workers}", {}).get("mb_per_second", {}).get("median")
        target = 0.9 * min(bandwidth_mb, local or bandwidth_mb)
        goals[f"workers={workers}"] = {
            "first_batch_under_2s": ours["first_batch_seconds"]["median"] < 2,
            "steady_target_mb_per_second": round(target, 1),
            "steady_at_least_90_percent": ours["mb_per_second"]["median"] >= target,
            "at_least_2x_mosaic": ratios.get(f"mixplane/mosaic/{workers}", {}).get("median", 0)
            >= 2,
        }
        loaded = results.get(f"local-loaded/{workers}", {}).get("mb_per_second", {}).get("median")
        if loaded:  # the same with the storage's CPU taken from the local run too
            goals[f"workers={workers}"]["steady_at_least_90_percent_of_local_loaded"] = ours[
                "mb_per_second"
            ]["median"] >= 0.9 * min(bandwidth_mb, loaded)
        if f"ranges/{workers}" in results:
            # Over the timed window: the whole run's figure also counts the catalog copy,
            # the metadata read while planning and the blocks read ahead at the end.
            ranged = results[f"ranges/{workers}"]["bytes_per_byte_steady"]["median"]
            goals[f"workers={workers}"]["ranges_at_most_1.25_bytes_per_byte"] = ranged <= 1.25
    output = {
        "settings": vars(args)
        | {
            "data": str(args.data),
            "result": str(args.result),
            "range_gap": os.environ.get(GAP_ENV, "default"),
        },
        "machine_cores": os.cpu_count(),
        "cache_limit_bytes": setup["cache_limit"],
        "mosaic_shuffle_block_size": setup["shuffle_block"],
        "prepared": prepared,
        "order": order,
        "results": results,
        "ratios": ratios,
        "goals": goals,
    }
    args.result.parent.mkdir(parents=True, exist_ok=True)
    args.result.write_text(json.dumps(output, indent=2, default=str).replace(f"{ROOT}/", ""))
    print_table(results, ratios, goals)
    print(f"written {args.result}", file=sys.stderr)


def print_table(results: dict, ratios: dict, goals: dict) -> None:
    """Medians as a markdown table, then the paired ratios and the goals."""
    print("| tool | workers | seq/s | MB/s | first batch (s) | link MB/s | link B per B read |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    formats = {"samples_per_second": ",.0f", "mb_per_second": ",.0f"}
    formats |= {"first_batch_seconds": ".2f", "link_mb_per_second": ",.0f"}
    formats |= {"bytes_per_byte_steady": ".2f"}
    for key, value in results.items():
        cells = [
            format(value[name]["median"], spec) if name in value else "-"
            for name, spec in formats.items()
        ]
        print(f"| {' | '.join(key.split('/'))} | " + " | ".join(cells) + " |")
    for key, value in results.items():
        if "peak_shards_mb" in value:
            shards, folder = value["peak_shards_mb"]["max"], value["peak_cache_mb"]["max"]
            print(f"{key}: peak cache {shards:,.0f} MB of shards, {folder:,.0f} MB in all")
    for key, value in results.items():
        if "cores" in value:
            busy = ", ".join(f"{n} {c['median']:.2f}" for n, c in value["cores"].items())
            print(f"{key}: cores busy while timed: {busy}")
    for key, ratio in ratios.items():
        print(f"{key}: {ratio['median']:.2f}x (rounds {ratio['min']:.2f}-{ratio['max']:.2f})")
    print(json.dumps(goals, indent=2))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        runner(sys.argv[2:])
    else:
        main()
