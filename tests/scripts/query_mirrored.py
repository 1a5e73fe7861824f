"""Query a catalog over remote datasets with the machine's metadata cache, as a mixture's
resolution does; print the selection's ranges as JSON.

    python query_mirrored.py CATALOG OPTIONS.json CACHE WHERE
"""

import json
import sys

from mixplane.catalog import Catalog

catalog, options, cache, where = sys.argv[1:5]
with open(options) as handle:
    storage_options = json.load(handle)
selection = Catalog(catalog, storage_options, metadata_cache=cache).select(where)
parts = sorted(selection, key=lambda part: part.dataset)
print(json.dumps([[p.dataset, p.shard.tolist(), p.start.tolist(), p.end.tolist()] for p in parts]))
