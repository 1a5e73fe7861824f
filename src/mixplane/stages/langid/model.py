"""Language probabilities from py3langid's byte n-gram model, many documents at a time.

py3langid ships a naive Bayes model over byte n-grams, found by walking a finite automaton
over the UTF-8 bytes. Its own `rank` walks one byte at a time in Python; here the automaton
runs over a whole batch at once (one numpy step per byte position, for every document still
long enough), with the transition table rewritten so that a step is a single lookup.
Scoring follows the library: log(1 + count) weighted feature sums plus the class prior,
divided by the square root of the byte length (its calibration), then a softmax. Each
document is scored from its own features, so results never depend on the batch.

Example:
    >>> model = NgramLanguageModel.load()
    >>> probs = model.probabilities([model.encode("Das ist ein kurzer deutscher Satz.")])
    >>> model.labels[int(probs[0].argmax())]
    'de'
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

# Largest walk grid (bytes x documents) held at once: 4M cells of 8 bytes.
_GRID_CELLS = 4_000_000


@dataclass(frozen=True)
class NgramLanguageModel:
    """The automaton and naive Bayes tables of the packaged model, as numpy arrays.

    A transition is addressed by `row of the current state + byte`. `next_row[t]` is the row
    of the state transition `t` leads to, `feature_after[t]` the feature that state emits
    (or -1), so a walk needs one lookup per byte and features are read off at the end.
    """

    start_row: int
    next_row: np.ndarray  # (transitions,) int64
    feature_after: np.ndarray  # (transitions,) int32
    feature_weights: np.ndarray  # (features, classes) float32 log P(feature | class)
    class_prior: np.ndarray  # (classes,) float32 log P(class)
    labels: tuple[str, ...]  # distinct labels, in first-appearance order
    fold: np.ndarray  # (classes, labels) 0/1 matrix summing columns of the same label

    @classmethod
    def load(cls) -> NgramLanguageModel:
        """Load the model file that ships inside the py3langid package (no download)."""
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        identifier = LanguageIdentifier.from_model_file(MODEL_FILE)
        next_state = np.asarray(identifier.tk_nextmove, dtype=np.int64)
        row_of_state = np.asarray(identifier.tk_row, dtype=np.int64) << 8
        feature_of_state = np.asarray(identifier.tk_output, dtype=np.int32)
        class_labels = tuple(identifier.nb_classes)
        labels = tuple(dict.fromkeys(class_labels))
        fold = np.zeros((len(class_labels), len(labels)))
        for column, label in enumerate(class_labels):
            fold[column, labels.index(label)] = 1.0
        return cls(
            start_row=int(row_of_state[0]),
            next_row=row_of_state[next_state],
            feature_after=feature_of_state[next_state],
            # float32 once (57 MB): float16 products have no fast path in numpy
            feature_weights=np.asarray(identifier.nb_ptc, dtype=np.float32),
            class_prior=np.asarray(identifier.nb_pc, dtype=np.float32),
            labels=labels,
            fold=fold,
        )

    @staticmethod
    def encode(text: str) -> bytes:
        """The bytes the model reads: NFC, lowercased if all upper case, UTF-8."""
        if text.isupper():
            text = text.lower()
        if not text.isascii():
            text = unicodedata.normalize("NFC", text)
        return text.encode("utf-8", errors="surrogatepass")

    def probabilities(self, samples: list[bytes]) -> np.ndarray:
        """A (documents, labels) array of probabilities; rows sum to 1.

        A sample in which the model finds no feature (empty, or no text it knows) gets a row
        of zeros: there is no evidence for any language.
        """
        result = np.zeros((len(samples), len(self.labels)))
        start = 0
        while start < len(samples):
            # The walk keeps a (bytes, documents) grid: bound it by taking fewer documents.
            end, longest = start, 0
            while end < len(samples):
                longest = max(longest, len(samples[end]))
                if end > start and longest * (end - start + 1) > _GRID_CELLS:
                    break
                end += 1
            result[start:end] = self._probabilities(samples[start:end])
            start = end
        return result

    def _probabilities(self, samples: list[bytes]) -> np.ndarray:
        count = len(samples)
        result = np.zeros((count, len(self.labels)))
        if not any(samples):
            return result
        document, feature, hits = self._feature_counts(samples)
        first_row = np.searchsorted(document, np.arange(count + 1))
        weights = np.log1p(hits.astype(np.float32))
        table, prior, fold = self.feature_weights, self.class_prior, self.fold
        for index in range(count):
            rows = slice(first_row[index], first_row[index + 1])
            if rows.start == rows.stop:
                continue
            scores = weights[rows] @ table[feature[rows]] + prior
            scores = scores.astype(np.float64) / np.sqrt(len(samples[index]))
            scores = np.exp(scores - scores.max())
            result[index] = (scores / scores.sum()) @ fold
        return result

    def _feature_counts(self, samples: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(document, feature, count) of every feature met in the automaton walk, sorted by
        document, then feature."""
        count = len(samples)
        lengths = np.fromiter((len(sample) for sample in samples), dtype=np.int64, count=count)
        order = np.argsort(-lengths, kind="stable")  # longest first: the active are a prefix
        sorted_lengths = lengths[order]
        longest = int(sorted_lengths[0])
        data = np.zeros((count, longest), dtype=np.uint8)
        for row, index in enumerate(order):
            data[row, : lengths[index]] = np.frombuffer(samples[index], np.uint8)
        data = np.ascontiguousarray(data.T)  # (positions, documents): a step reads one row
        # active[k]: how many documents have a byte at position k
        active = np.searchsorted(-sorted_lengths, -np.arange(longest), side="left")
        taken = np.empty((longest, count), dtype=np.int64)  # transition taken at each byte
        taken[0] = data[0] + np.int64(self.start_row)
        next_row = self.next_row
        for step in range(1, longest):
            alive = active[step]
            # the row of the state the previous transition reached, plus this byte
            np.add(next_row[taken[step - 1, :alive]], data[step, :alive], out=taken[step, :alive])
        inside = np.arange(longest)[:, None] < sorted_lengths[None, :]
        emitted = self.feature_after[taken[inside]]
        document = np.broadcast_to(order, inside.shape)[inside]
        found = emitted >= 0
        total = self.feature_weights.shape[0]
        keys, hits = np.unique(document[found] * total + emitted[found], return_counts=True)
        return keys // total, keys % total, hits
