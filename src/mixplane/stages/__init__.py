"""Built-in stages, by the name a pipeline YAML uses for them.

Entries are import paths so that a pipeline imports only the stages it uses.
"""

BUILTIN_STAGES: dict[str, str] = {}
