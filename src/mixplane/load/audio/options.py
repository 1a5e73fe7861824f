"""The audio loader's batching options, checked once: a wrong type, NaN or a value out of
range is refused with the option's name.

Example:
    >>> options = LoaderOptions.checked(16000, 30.0, None, None, 1, 2048, "waveform")
    >>> options.budget
    480000
    >>> LoaderOptions.checked(16000, float("nan"), None, None, 1, 2048, "waveform")
    Traceback (most recent call last):
    ...
    mixplane.errors.ConfigError: batch_seconds must be a finite number > 0, got nan
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from mixplane.errors import ConfigError
from mixplane.load.audio.batch import Features


def _whole(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ConfigError(f"{name} must be a whole number >= {least}, got {value!r}")
    return int(value)


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def features_of(features: Any, sample_rate: int) -> Features | None:
    """The callable adding features to a batch (None: the waveform alone). `log_mel` is
    `LogMel` at the loader's `sample_rate`; a callable that names its own `sample_rate`
    (a `LogMel` built by hand) must agree with the loader's, or its mel scale would be wrong."""
    if features == "waveform":
        return None
    if features == "log_mel":
        from mixplane.load.audio.features import LogMel

        return LogMel(sample_rate=sample_rate)
    if callable(features):
        own = getattr(features, "sample_rate", None)
        if isinstance(own, numbers.Real) and own != sample_rate:
            raise ConfigError(
                f"the features callable works at sample_rate {own}, the loader decodes clips "
                f"at {sample_rate}: build it with sample_rate={sample_rate}"
            )
        return features
    raise ConfigError(
        f"features must be 'waveform', 'log_mel' or a callable (audio, lengths) -> dict, "
        f"got {features!r}"
    )


@dataclass(frozen=True)
class LoaderOptions:
    sample_rate: int
    batch_seconds: float | None
    batch_size: int | None
    max_frames: int | None  # clips cut to this many frames (max_seconds)
    pad_multiple: int
    window: int
    features: Features | None

    @property
    def budget(self) -> int | None:
        """Padded frames per batch (batch_seconds at sample_rate), None for a fixed size."""
        if self.batch_seconds is None:
            return None
        return int(self.batch_seconds * self.sample_rate)

    @classmethod
    def checked(
        cls,
        sample_rate: Any,
        batch_seconds: Any,
        batch_size: Any,
        max_seconds: Any,
        pad_multiple: Any,
        window: Any,
        features: Any,
    ) -> LoaderOptions:
        rate = _whole("sample_rate", sample_rate, 1)
        if (batch_seconds is None) == (batch_size is None):
            raise ConfigError(
                "give batch_seconds (batches of clips of similar length, up to that many "
                "seconds of padded audio) or batch_size (clips per batch), exactly one"
            )
        seconds = None if batch_seconds is None else _seconds("batch_seconds", batch_seconds)
        size = None if batch_size is None else _whole("batch_size", batch_size, 1)
        crop = None if max_seconds is None else _seconds("max_seconds", max_seconds)
        max_frames = None if crop is None else max(1, round(crop * rate))
        multiple = _whole("pad_multiple", pad_multiple, 1)
        options = cls(
            rate,
            seconds,
            size,
            max_frames,
            multiple,
            _whole("window", window, 1),
            features_of(features, rate),
        )
        if options.budget is not None and options.budget < multiple:
            raise ConfigError(
                f"batch_seconds={batch_seconds} at {rate} Hz is {options.budget} frames, less "
                f"than pad_multiple={multiple}: no clip fits a batch"
            )
        return options
