"""Built-in stages, by the name a pipeline YAML uses for them.

Entries are import paths so that a pipeline imports only the stages it uses.
"""

BUILTIN_STAGES: dict[str, str] = {
    "extract": "mixplane.stages.extract:Extract",
    "url_filter": "mixplane.stages.urlfilter:UrlFilter",
    "license": "mixplane.stages.governance.license:License",
    "opt_out": "mixplane.stages.governance.optout:OptOut",
    "normalize": "mixplane.stages.normalize:Normalize",
    "langid": "mixplane.stages.langid:LanguageId",
    "pii": "mixplane.stages.pii:Pii",
    "gopher_quality": "mixplane.stages.quality.gopher_quality:GopherQuality",
    "gopher_repetition": "mixplane.stages.quality.gopher_repetition:GopherRepetition",
    "c4": "mixplane.stages.quality.c4:C4",
    "fineweb": "mixplane.stages.quality.fineweb:FineWeb",
    "wordlist": "mixplane.stages.quality.wordlist:WordList",
    "score": "mixplane.stages.quality.score:Score",
    "classify": "mixplane.stages.classify.stage:Classify",
    "dedup_exact": "mixplane.stages.dedup.exact:ExactDedup",
    "dedup_minhash": "mixplane.stages.dedup.near:MinHashDedup",
    "dedup_semantic": "mixplane.stages.dedup.semantic.stage:SemanticDedup",
    "fetch_images": "mixplane.stages.image.fetch:FetchImages",
    "decode_image": "mixplane.stages.image.decode:DecodeImage",
    "resize_image": "mixplane.stages.image.resize:ResizeImage",
    "caption_filter": "mixplane.stages.image.caption:CaptionFilter",
    "clip_score": "mixplane.stages.image.similarity:ClipScore",
    "image_safety": "mixplane.stages.image.safety:ImageSafety",
    "dedup_image": "mixplane.stages.dedup.image:ImageDedup",
    "dedup_audio": "mixplane.stages.dedup.audio:AudioDedup",
    "decode_audio": "mixplane.stages.audio.decode:DecodeAudio",
    "resample_audio": "mixplane.stages.audio.resample:ResampleAudio",
    "audio_quality": "mixplane.stages.audio.quality:AudioQuality",
}
