"""Speech from text with espeak-ng: real, speech-like audio with a known transcript.

espeak-ng is an OS package (`apt-get install espeak-ng`; `make audio-tools` installs it);
its output depends only on the text, voice, speed and pitch, so a corpus made with it is
the same on every run with the same espeak-ng.

Example:
    >>> wav = speak("Hello there.", "en", speed=160, pitch=50)  # doctest: +SKIP
    >>> wav[:4]  # doctest: +SKIP
    b'RIFF'
"""

from __future__ import annotations

import shutil
import subprocess

from mixplane.errors import ConfigError

ESPEAK = "espeak-ng"
# The synthetic corpus's languages -> espeak-ng voices. Japanese is left out: espeak-ng
# reads kanji as the names of characters, so every Japanese clip sounds alike.
VOICES = {"de": "de", "en": "en-us", "es": "es", "fr": "fr", "zh": "cmn"}


def espeak_path() -> str:
    """The espeak-ng program, or a ConfigError saying how to install it."""
    found = shutil.which(ESPEAK)
    if found is None:
        raise ConfigError(
            "the synthetic audio corpus speaks its transcripts with espeak-ng, which is not "
            "installed: `make audio-tools` (or apt-get install espeak-ng)"
        )
    return found


def speak(text: str, language: str, speed: int = 160, pitch: int = 50) -> bytes:
    """`text` spoken in `language` (a key of VOICES) as a 16-bit mono WAV file at 22,050 Hz;
    `speed` in words per minute, `pitch` 0 to 99."""
    command = [espeak_path(), "-v", VOICES[language], "-s", str(speed), "-p", str(pitch)]
    done = subprocess.run(
        [*command, "--stdout", "--", text], capture_output=True, check=False, timeout=60
    )
    if done.returncode != 0 or not done.stdout.startswith(b"RIFF"):
        error = done.stderr.decode("utf-8", "replace").strip()[:200]
        raise RuntimeError(f"espeak-ng failed on {text[:40]!r} ({language}): {error}")
    return done.stdout
