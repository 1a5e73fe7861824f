"""Text embeddings from a frozen local encoder, shared by embedding classifiers and
semantic dedup."""
