"""Read 100 sequences of a mixture (JSON file) as one rank, through the shard cache, and
print them with the cache's counters and the cached shard names as JSON."""

import json
import os
import sys

from mixplane.load import MixtureDataset

with open(sys.argv[1]) as handle:
    spec = json.load(handle)
rank, world_size = int(sys.argv[2]), int(sys.argv[3])
dataset = MixtureDataset(spec, rank=rank, world_size=world_size, read_ahead=1, prefetch=1)
rows = [batch["input_ids"].tolist() for _, batch in zip(range(100), dataset, strict=False)]
folder = os.path.join(spec["cache_dir"], "shards")
cached = sorted(n for n in os.listdir(folder) if n.endswith(".bin"))
print(json.dumps({"input_ids": rows, "stats": dataset.source.cache.stats(), "cached": cached}))
