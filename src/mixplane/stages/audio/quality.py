"""`audio_quality`: duration bounds, silence, clipping and loudness of each clip.

Example pipeline step:

    - audio_quality: {min_duration: 1.0, max_duration: 30.0, max_silence_ratio: 0.5}
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from mixplane.document import Document, Drop
from mixplane.stages.audio.decode import decoded_clip
from mixplane.stages.audio.signal import clipping_ratio, peak_dbfs, rms_dbfs, silence_ratio
from mixplane.stages.base import Result, Stage


class AudioQuality(Stage):
    """Measures each clip and drops those outside the bounds, first failure first:
    `audio_too_short` / `audio_too_long` (`min_duration`, `max_duration` seconds),
    `mostly_silent` (`silence_ratio` above `max_silence_ratio`), `clipping`
    (`clipping_ratio` above `max_clipping_ratio`), `too_quiet` (`rms_dbfs` below
    `min_rms_dbfs`). A bound left unset is not checked.

    Adds `rms_dbfs` (RMS level of the whole clip, dBFS; a full-scale sine is -3.01),
    `peak_dbfs`, `silence_ratio` (share of 20 ms frames quieter than `silence_dbfs`) and
    `clipping_ratio` (share of samples at 0.999 of full scale or beyond). The loudness is
    a plain RMS, not the K-weighted, gated LUFS of ITU-R BS.1770. Clips that do not decode
    are excluded with `decode_audio`'s reasons.

    Example:
        >>> AudioQuality().apply(Document("a", "hi", "web"))
        Drop(reason='no_audio', detail={'media': []})
    """

    name: ClassVar[str] = "audio_quality"
    adds: ClassVar[tuple[str, ...]] = ("rms_dbfs", "peak_dbfs", "silence_ratio", "clipping_ratio")

    min_duration: float | None = Field(0.5, ge=0, description="drop shorter clips (seconds)")
    max_duration: float | None = Field(None, gt=0, description="drop longer clips (seconds)")
    max_silence_ratio: float | None = Field(
        0.9, ge=0, le=1, description="drop clips with a larger share of silent 20 ms frames"
    )
    silence_dbfs: float = Field(-50.0, le=0, description="frames below this RMS are silent")
    max_clipping_ratio: float | None = Field(
        0.01, ge=0, le=1, description="drop clips with a larger share of clipped samples"
    )
    min_rms_dbfs: float | None = Field(None, le=0, description="drop quieter clips (dBFS)")

    def apply(self, doc: Document) -> Result:
        clip = decoded_clip(doc)
        if isinstance(clip, Drop):
            return clip
        info, samples = clip
        duration = round(len(samples) / info.sample_rate, 6)
        if self.min_duration is not None and duration < self.min_duration:
            return Drop("audio_too_short", {"duration": duration, "min": self.min_duration})
        if self.max_duration is not None and duration > self.max_duration:
            return Drop("audio_too_long", {"duration": duration, "max": self.max_duration})
        measures = {
            "rms_dbfs": rms_dbfs(samples),
            "peak_dbfs": peak_dbfs(samples),
            "silence_ratio": silence_ratio(samples, info.sample_rate, self.silence_dbfs),
            "clipping_ratio": clipping_ratio(samples),
        }
        limits = (
            ("mostly_silent", "silence_ratio", self.max_silence_ratio, 1),
            ("clipping", "clipping_ratio", self.max_clipping_ratio, 1),
            ("too_quiet", "rms_dbfs", self.min_rms_dbfs, -1),
        )
        for reason, measure, bound, sign in limits:
            if bound is not None and sign * measures[measure] > sign * bound:
                key = "max" if sign > 0 else "min"
                return Drop(reason, {measure: measures[measure], key: bound})
        doc.metadata.update(measures)
        return doc
