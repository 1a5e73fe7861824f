"""One rank of a machine starting on a mixture (JSON file): print the input ids of its first
COUNT sequences as JSON.

    python rank_start.py MIXTURE.json RANK WORLD_SIZE COUNT
"""

import json
import sys

from mixplane.load import MixtureDataset

with open(sys.argv[1]) as handle:
    spec = json.load(handle)
rank, world_size, count = (int(value) for value in sys.argv[2:5])
dataset = MixtureDataset(spec, rank=rank, world_size=world_size, read_ahead=1, prefetch=1)
rows = [batch["input_ids"].tolist() for _, batch in zip(range(count), dataset, strict=False)]
print(json.dumps(rows))
