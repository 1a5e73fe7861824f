"""Filtering documents by their URL: the `url_filter` stage, its list files and how URLs are
normalized before they are compared."""

from mixplane.stages.urlfilter.stage import UrlFilter, UrlRules, judge_url

__all__ = ["UrlFilter", "UrlRules", "judge_url"]
