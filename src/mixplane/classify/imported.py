"""Making a model folder from a fastText model trained elsewhere (DCLM's, say), on disk.

The file is copied into a new folder beside a `classifier.json` that records its labels (read
from the model), the label to score, the text preprocessing to apply, where the file came
from, and its SHA-256. There are no metrics and no training config: mixplane did not train it.

Example:
    >>> import_fasttext("downloads/dclm.bin", "models/dclm", positive_label="hq")  # doctest: +SKIP
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from mixplane._version import __version__
from mixplane.classify.folder import (
    check_new_folder,
    fasttext_version,
    require_fasttext,
    staged_folder,
    write_description,
)
from mixplane.errors import ConfigError, InputError
from mixplane.stages.classify.model import (
    FORMAT_VERSION,
    KIND,
    LABEL_PREFIX,
    MODEL_FILE,
    file_sha256,
)


def import_fasttext(
    model_file: str | Path, output: str | Path, positive_label: str, lowercase: bool = False
) -> dict[str, Any]:
    """Copy `model_file` into the new model folder `output`; return its description.

    `positive_label` (without `__label__`) is the label the `classify` stage scores by
    default; `lowercase` says whether the model was trained on lowercased text (newlines
    always become spaces, see `stages.classify.text`).
    """
    source, target = Path(model_file), Path(output)
    if not source.is_file():
        raise InputError(f"{source}: no such file")
    check_new_folder(target)
    fasttext = require_fasttext("importing")
    try:
        model = fasttext.load_model(str(source))
    except ValueError as error:
        raise InputError(f"{source}: fastText cannot read it ({error})") from None
    labels = [label.removeprefix(LABEL_PREFIX) for label in model.labels]
    if not labels:
        raise InputError(f"{source}: not a supervised fastText model (it has no labels)")
    if positive_label not in labels:
        raise ConfigError(
            f"{source}: the model has no label {positive_label!r}; its labels: {', '.join(labels)}"
        )
    with staged_folder(target) as folder:
        shutil.copyfile(source, folder / MODEL_FILE)
        description = {
            "format": FORMAT_VERSION,
            "kind": KIND,
            "labels": labels,
            "positive_label": positive_label,
            "preprocess": {"lowercase": lowercase},
            "model_file": MODEL_FILE,
            "model_sha256": file_sha256(folder / MODEL_FILE),
            "training": None,
            "data": {"imported_from": str(source.resolve())},
            "metrics": None,
            "versions": {"mixplane": __version__, "fasttext": fasttext_version()},
        }
        write_description(folder, description)
    return description
