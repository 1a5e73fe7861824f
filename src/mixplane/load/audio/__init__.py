"""Loading audio-text mixtures."""
