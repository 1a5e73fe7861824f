"""Language identification: the `langid` stage, its packaged model and language codes."""

from mixplane.stages.langid.stage import LanguageId

__all__ = ["LanguageId"]
