"""`dedup_semantic`: SemDeDup (Abbas et al. 2023) on embeddings from a local encoder.

Modules: `kmeans` (seeded spherical k-means), `rule` (the paper's removal rule inside one
k-means cluster), `keep` (which document of a group is kept), `files` (the work files),
`merge` (the merge's steps, fanned out per task or per range of clusters) and `stage`.
"""
