"""Language codes and the script evidence that separates Chinese from Japanese.

The packaged model labels a few varieties with ISO 639-3 codes (Cantonese `yue`, Egyptian
Arabic `arz`...). Each one that belongs to a language with an ISO 639-1 code is folded into
it, summing the probabilities; labels of languages without a two-letter code keep their
three-letter code.

Example:
    >>> iso_code("yue"), iso_code("de"), iso_code("pcm")
    ('zh', 'de', 'pcm')
    >>> han_script_language("東京は日本の首都です。")
    ('ja', 1.0, 1.0)
"""

from __future__ import annotations

import re

import numpy as np

UNDETERMINED = "und"

_TO_ISO_639_1 = {
    "ary": "ar",  # Moroccan Arabic
    "arz": "ar",  # Egyptian Arabic
    "yue": "zh",  # Cantonese
    "wuu": "zh",  # Wu
    "uzs": "uz",  # Southern Uzbek
    "gug": "gn",  # Paraguayan Guarani
    "fuv": "ff",  # Nigerian Fulfulde
    "kik": "ki",  # Kikuyu
    "sdh": "ku",  # Southern Kurdish
}

# Every code the stage can output (the model's labels, folded), for validating `keep`.
_MODEL_CODES_TEXT = (
    "ace af am an ar as az ba bcl be bg bn br bs ca crh cs cy da de dz el en eo es et eu "
    "ext fa ff fi fo fr fy ga gcf gcr gd gl gn gom grc gu guw ha hbo he hi hr ht hu hy id "
    "ig is it ja jv ka kab ki kk km kn ko ku ky la lb lg lij ln lo lt ltg lv mg mk ml mn "
    "mr ms mt my ne nl nn no nso oc om or pa pcm pl ps pt qu ro ru rw sa se si sk sl sn so "
    "sq sr st sv sw ta te tg th tk tl tr tt ug uk ur uz vec vi vo wa xh yo zh zu zxx "
)
MODEL_CODES = frozenset(_MODEL_CODES_TEXT.split())

# Hiragana and katakana (full and half width), without the middle dot and the long-vowel
# mark, which Chinese text borrows.
_KANA = re.compile(
    r"[\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fd-\u30ff\u31f0-\u31ff\uff66-\uff9d]"
)
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_HAN_OR_KANA = re.compile(
    r"[\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fd-\u30ff\u31f0-\u31ff\uff66-\uff9d"
    r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]"
)
_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")
_LETTER = re.compile(r"[^\W\d_]")

# Japanese prose is 30-60% kana; Chinese uses none apart from the odd borrowed particle.
KANA_SHARE_FOR_JAPANESE = 0.05
# The chance that a character of Japanese text is not kana: n characters without any kana
# are Japanese with likelihood NON_KANA**n, which makes short Han-only text ambiguous.
NON_KANA = 0.65
# Above this share of Han and kana among the letters, script decides between zh and ja even
# when the model's top label is another language.
CJK_SHARE_FOR_SCRIPT_RULE = 0.5


def iso_code(label: str) -> str:
    """The ISO 639-1 code of a model label, or the label itself when there is none."""
    return _TO_ISO_639_1.get(label, label)


def fold_to_codes(labels: tuple[str, ...]) -> tuple[tuple[str, ...], np.ndarray]:
    """Output codes and the (labels, codes) 0/1 matrix that sums probabilities into them."""
    codes = tuple(dict.fromkeys(iso_code(label) for label in labels))
    matrix = np.zeros((len(labels), len(codes)))
    for row, label in enumerate(labels):
        matrix[row, codes.index(iso_code(label))] = 1.0
    return codes, matrix


def has_letters(text: str) -> bool:
    return _LETTER.search(text) is not None


def han_script_language(text: str) -> tuple[str, float, float] | None:
    """('ja' or 'zh', share of Han and kana among letters, probability of that choice), or
    None for text without Han or kana.

    Kana decides: Han text with kana is Japanese, Han text without it Chinese, with a
    probability that grows with the number of characters (four Han characters alone could
    well be Japanese; forty could not). Text with more Hangul than Han and kana is Korean.
    """
    if text.isascii() or not _HAN_OR_KANA.search(text):
        return None
    han = len(_HAN.findall(text))
    kana = len(_KANA.findall(text))
    cjk = han + kana
    if cjk == 0 or len(_HANGUL.findall(text)) > cjk:
        return None
    letters = max(len(_LETTER.findall(text)), cjk)
    if kana >= max(1.0, KANA_SHARE_FOR_JAPANESE * cjk):
        return "ja", cjk / letters, 1.0
    return "zh", cjk / letters, 1.0 / (1.0 + NON_KANA**cjk)
