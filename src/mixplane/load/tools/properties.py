"""A document property per token, from the `document_refs` of a batch (e.g. a loss by
language): each dataset's metadata column is read once, then every lookup is an array
index.

Example:
    >>> dataset = MixtureDataset("mixture.yaml", document_refs=True)  # doctest: +SKIP
    >>> language = DocumentProperty(dataset, "language")  # doctest: +SKIP
    >>> batch = next(dataset.batches(8))  # doctest: +SKIP
    >>> language.names, language.codes(batch["document_refs"]).shape  # doctest: +SKIP
    (['de', 'en', 'fr'], (8, 2048))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from mixplane.errors import ConfigError

if TYPE_CHECKING:
    from mixplane.load.dataset import MixtureDataset


class DocumentProperty:
    """The metadata column `column` of every document of a mixture's dataset versions.

    `values(refs)` gives each token's value; for a text column, `names` lists its distinct
    values (sorted) and `codes(refs)` gives each token's index into `names`, ready for
    `np.bincount` or `torch.Tensor.scatter_add_`. `refs` is a batch's `document_refs` (numpy
    or a CPU tensor), of any leading shape, ending in (dataset, document).
    """

    def __init__(self, dataset: MixtureDataset, column: str):
        from mixplane.store.dataset import TokenizedDataset

        spec = dataset.spec
        self.column = column
        self.datasets = [info["dataset"] for info in dataset.resolved.datasets]
        per_dataset = []
        for info in dataset.resolved.datasets:
            found = TokenizedDataset(info["uri"], spec.storage_options, spec.cache_dir)
            per_dataset.append(_read_column(found.meta_urls(), column, spec.storage_options))
        self.names: list[str] | None = None
        if all(values.dtype == object for values in per_dataset):
            every = np.concatenate(per_dataset).astype(str) if per_dataset else np.array([])
            self.names = np.unique(every).tolist()
            names = np.array(self.names)
            self._codes = [np.searchsorted(names, v.astype(str)) for v in per_dataset]
        self._values = per_dataset

    def values(self, refs: Any) -> np.ndarray:
        """Each token's value of the column (shape: `refs` without its last axis)."""
        return self._lookup(self._values, refs)

    def codes(self, refs: Any) -> np.ndarray:
        """Each token's index into `names` (a text column only)."""
        if self.names is None:
            raise ConfigError(f"{self.column} is not a text column; use values(refs)")
        return self._lookup(self._codes, refs)

    def _lookup(self, per_dataset: list[np.ndarray], refs: Any) -> np.ndarray:
        refs = np.asarray(refs)
        if refs.ndim < 1 or refs.shape[-1] != 2:
            raise ConfigError(
                f"document_refs end in (dataset, document) pairs; got an array of shape "
                f"{refs.shape} (build the dataset with document_refs=True)"
            )
        datasets, documents = refs[..., 0], refs[..., 1]
        out = np.empty(datasets.shape, dtype=per_dataset[0].dtype if per_dataset else object)
        for number, values in enumerate(per_dataset):
            mine = datasets == number
            out[mine] = values[documents[mine]]
        return out


def _read_column(urls: list[str], column: str, storage_options: dict[str, Any]) -> np.ndarray:
    """One column of every shard's metadata, in shard order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mixplane.io.urls import url_filesystem

    parts = []
    for url in urls:
        fs, path = url_filesystem(url, storage_options)
        with fs.open(path, "rb") as handle:
            file = pq.ParquetFile(handle)
            if column not in file.schema_arrow.names:
                raise ConfigError(
                    f"{url} has no column {column!r}; its columns: "
                    f"{', '.join(file.schema_arrow.names)}"
                )
            parts.append(file.read(columns=[column]).column(column))
    values = pa.chunked_array([c for part in parts for c in part.chunks], type=parts[0].type)
    return values.to_numpy()
