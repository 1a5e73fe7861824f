"""Errors a user can act on.

A `MixplaneError` is raised for user mistakes (bad config, bad path, bad input). The CLI prints
its message as one line and exits non-zero; anything else is a bug and keeps its traceback.
"""


class MixplaneError(Exception):
    """A mistake the user can fix; the message says what, where and what to do."""

    #: The command's exit status when it fails with this error.
    exit_code = 2


class ConfigError(MixplaneError):
    """A configuration file or option is invalid."""


class InputError(MixplaneError):
    """An input path or file cannot be used."""


class MostlyQuarantinedError(InputError):
    """Nearly every record of an input was quarantined for one reason (say, a wrong
    `text_key`). The run's outputs are written all the same; `result` is what it produced."""

    def __init__(self, message: str, result=None):
        super().__init__(message)
        self.result = result


class StageErrorsError(MixplaneError):
    """A stage's own code raised on more records than `max_stage_errors` allows: a bug in
    the stage, not bad input. The run's outputs are written all the same, the records in
    `_errors/` with their tracebacks; `result` is what the run produced."""

    exit_code = 1

    def __init__(self, message: str, result=None):
        super().__init__(message)
        self.result = result


class SupersededVersionWarning(UserWarning):
    """A mixture pins a dataset version that a takedown replaced: it still reads the
    documents the takedown removed. Move the pin to the version named, or set
    `takedowns: refuse` in the mixture to make this an error."""
