"""Heuristic quality filters (Gopher, C4, FineWeb, word lists) and the `score` stage.

Every filter runs in `mode: filter` (drop with a reason) or `mode: annotate` (keep, add the
measured signals as metadata); see `base.QualityFilter`.
"""
