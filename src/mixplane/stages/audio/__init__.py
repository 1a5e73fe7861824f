"""Audio stages: decode and validate, resample, measure quality.

Each stage reads and writes the encoded clip in `doc.media` (see `mixplane.media.audio_of`)
and adds metadata such as `duration`, `sample_rate` and `channels`; the transcript or
caption is `doc.text`, which the text stages (langid, pii...) treat as any text.
"""
