"""Data governance stages: the licence a document was published under (`license`) and its
publisher's opt-outs from AI training and text and data mining (`opt_out`)."""

#: The metadata field an input's `license:` declaration reaches its documents in.
DECLARED_KEY = "declared_license"
