"""Image stages: fetch, decode and validate, resize and re-encode, caption limits, CLIP score.

Each stage reads and writes the encoded image in `doc.media` (see `mixplane.media.image_of`)
and adds metadata such as `width`, `height` and `image_format`; the caption is `doc.text`.
"""
