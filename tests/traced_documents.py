"""Documents looked up by id in a catalog, to check what a trace says against the stored
tokens (shared by the packed and the unpacked trace tests)."""

from __future__ import annotations

import numpy as np

from mixplane.catalog import Catalog
from mixplane.store import ShardReader


class Documents:
    """Documents looked up by id in the catalog's versions, as a person checking a trace
    would: the version's shards, their ids, the stored tokens."""

    def __init__(self, catalog: str, eos: int):
        self.catalog = Catalog(catalog)
        self.eos = eos
        self.found: dict[str, dict[str, tuple[ShardReader, int]]] = {}

    def tokens(self, ref: str, document_id: str) -> np.ndarray:
        if ref not in self.found:
            version = self.catalog.get(ref)
            by_id = {}
            for stem in version.stems:
                reader = ShardReader(f"{version.uri}/{stem}")
                for index, found in enumerate(reader.metadata(["id"]).column("id").to_pylist()):
                    by_id[found] = (reader, index)
            self.found[ref] = by_id
        reader, index = self.found[ref][document_id]
        return reader.document(index)

    def sequence(self, sequence: dict) -> np.ndarray:
        """The sequence's tokens, cut from its documents as the trace says."""
        pieces = []
        for document in sequence["documents"]:
            stored = self.tokens(document["dataset"], document["id"])
            begin, end = document["tokens"]
            assert (end > len(stored)) == document["eos"]
            whole = np.append(stored, self.eos) if document["eos"] else stored
            assert 0 <= begin < end <= len(whole)
            pieces.append(whole[begin:end])
        return np.concatenate(pieces)
