"""Learned classifiers: the model folder format, fastText scoring, and the `classify` stage."""
