"""Deduplication across a whole run: `dedup_exact` (normalised text) and `dedup_minhash`
(near-duplicates by MinHash LSH), both global stages, optionally against a persistent index
of earlier runs."""
