"""English strings the word splitter keeps whole or splits in a fixed way.

Rule-based tokenizers treat a few hundred strings specially: abbreviations whose period is
part of the word ("Dr.", "e.g."), contractions split into their parts ("don't" -> "do",
"n't"), clock times ("5pm" -> "5", "pm") and emoticons. The table is built here from small
lists, with every apostrophe form also written with the typographic apostrophe.

Example:
    >>> SPECIAL_CASES["don't"], SPECIAL_CASES["e.g."]
    (('do', "n't"), ('e.g.',))
"""

from __future__ import annotations

from collections.abc import Iterable

_table: dict[str, tuple[str, ...]] = {}


def _add(*parts: str) -> None:
    _table["".join(parts)] = parts


def _with_title(word: str) -> Iterable[str]:
    return (word, word.title())


# Pronouns and wh-words with the clitics they combine with; each clitic also appears
# without its apostrophe ("youll"), as informal text writes it.
_CLITICS_BY_HOST = {
    ("i",): ("'m", "'ma", "'ll", "'ll've", "'d", "'d've", "'ve"),
    ("you", "we", "they"): ("'ll", "'ll've", "'d", "'d've", "'ve", "'re"),
    ("he", "she", "it"): ("'ll", "'ll've", "'d", "'d've", "'s"),
    ("who", "what", "when", "where", "why", "how", "there"): (
        "'s", "'ll", "'ll've", "'d", "'d've", "'re", "'ve"
    ),
    ("that", "this"): ("'s", "'ll", "'ll've", "'d", "'d've"),
    ("these", "those"): ("'ll", "'ll've", "'d", "'d've", "'re", "'ve"),
}  # fmt: skip

for _hosts, _clitics in _CLITICS_BY_HOST.items():
    for _host in _hosts:
        for _form in _with_title(_host):
            for _clitic in _clitics:
                _pieces = [p for p in _clitic.replace("'", " '").split(" ") if p]
                if _clitic == "'ma":
                    _pieces = ["'m", "a"]
                _add(_form, *_pieces)
                _add(_form, *(p.lstrip("'") for p in _pieces))

# Auxiliaries with "n't" (and "n't've"); "can't" splits as "ca" + "n't".
for _verb in ("ca", "could", "do", "does", "did", "had", "may", "might", "must", "need",
              "ought", "sha", "should", "wo", "would"):  # fmt: skip
    for _form in _with_title(_verb):
        _add(_form, "n't")
        _add(_form, "nt")
        _add(_form, "n't", "'ve")
        _add(_form, "nt", "ve")
for _verb in ("could", "might", "must", "should", "would"):
    for _form in _with_title(_verb):
        _add(_form, "'ve")
        _add(_form, "ve")
for _verb in ("ai", "are", "is", "was", "were", "have", "has", "dare"):
    for _form in _with_title(_verb):
        _add(_form, "n't")
        _add(_form, "nt")

# Words that look like a host plus clitic but are ordinary words.
for _word in ("ill", "its", "hell", "shell", "shed", "were", "well", "whore"):
    for _form in _with_title(_word):
        _table.pop(_form, None)

# Dropped final g ("nothin'") and dropped initial letters ("'em") stay one token.
for _word in ("doin", "goin", "nothin", "nuthin", "ol", "somethin", "lovin", "havin"):
    for _form in _with_title(_word):
        _add(_form)
        _add(_form + "'")
for _word in ("em", "ll", "nuff"):
    _add(_word)
for _word in ("em", "ll", "nuff", "cause", "cos", "coz", "cuz", "bout"):
    _add("'" + _word)
for _word in ("cause", "cos", "coz", "cuz"):
    _add("'" + _word.title())

for _first, _second in (("can", "not"), ("gon", "na"), ("got", "ta"), ("let", "'s"),
                        ("c'm", "on"), ("not", "'ve"), ("not", "ve")):  # fmt: skip
    _add(_first, _second)
    _add(_first[0].upper() + _first[1:], _second)
_add("y'", "all")
_add("y", "all")
for _word in ("how'd'y", "How'd'y"):
    _add(_word[:-4], "'d", "'y")
for _word in ("ma'am", "Ma'am", "o'clock", "O'clock", "and/or", "w/o", "'s", "'S", "'d", "'re",
              "'", "''", "C++", "\\\")", "\\n", "\\t", "<space>", "\u2014"):  # fmt: skip
    _add(_word)

# Clock times: "5pm", "11a.m.".
for _hour in range(1, 13):
    for _suffix in ("am", "a.m.", "pm", "p.m."):
        _add(str(_hour), _suffix)

# Abbreviations whose final period belongs to the word: titles, companies, months, US states,
# Latin phrases, and single lowercase letters ("a." in enumerations).
_ABBREVIATIONS = (
    "a.m. p.m. e.g. E.g. E.G. i.e. I.e. I.E. vs. v.s. Mr. Mrs. Ms. Dr. Prof. Jr. St. Mt. Rev. "
    "Gen. Gov. Sen. Rep. Adm. Messrs. Ph.D. Inc. Ltd. Co. co. Corp. Bros. D.C. "
    "Jan. Feb. Mar. Apr. Jun. Jul. Aug. Sep. Sept. Oct. Nov. Dec. "
    "Ak. Ala. Ariz. Ark. Calif. Colo. Conn. Del. Fla. Ga. Ia. Id. Ill. Ind. Kan. Kans. "
    "Ky. La. Mass. Md. Mich. Minn. Miss. Mo. Mont. N.C. N.D. N.H. N.J. N.M. N.Y. Neb. Nebr. "
    "Nev. Okla. Ore. Pa. S.C. Tenn. Va. Wash. Wis."
)
for _word in _ABBREVIATIONS.split():
    _add(_word)
for _letter in "abcdefghijklmnopqrstuvwxyz\u00e4\u00f6\u00fc":
    _add(_letter + ".")

# Emoticons.
_EMOTICONS = (
    ":) :-) :)) :-)) :))) :-))) (: (-: =) (= :] :-] [: [-: [= =] :o) (o: :} :-} 8) 8-) (-8 ;) "
    ";-) (; (-; :( :-( :(( :-(( :((( :-((( ): )-: =( >:( :') :'-) :'( :'-( :/ :-/ =/ =| :| :-| "
    "]= =[ :1 :P :-P :p :-p :O :-O :o :-o :0 :-0 :() >:o :* :-* :3 :-3 =3 :> :-> :X :-X :x :-x "
    ":D :-D ;D ;-D =D xD XD xDD XDD 8D 8-D ^_^ ^__^ ^___^ >.< >.> <.< ._. ;_; -_- -__- v.v V.V "
    "v_v V_V o_o o_O O_o O_O 0_o o_0 0_0 o.O O.o O.O o.o 0.0 o.0 0.o @_@ <3 <33 <333 </3 "
    "(^_^) (-_-) (._.) (>_<) (*_*) (\u00ac_\u00ac) \u0ca0_\u0ca0 \u0ca0\ufe35\u0ca0 "
    "(\u0ca0_\u0ca0) \u00af\\(\u30c4)/\u00af ><(((*> "
    "(\u256f\u00b0\u25a1\u00b0\uff09\u256f\ufe35\u253b\u2501\u253b"
)
for _word in _EMOTICONS.split():
    _add(_word)
for _unit in "cfkCFK":
    _add("\u00b0", _unit, ".")

# Every entry with a straight apostrophe also exists with the typographic one.
for _key, _parts in list(_table.items()):
    if "'" in _key:
        _table[_key.replace("'", "\u2019")] = tuple(p.replace("'", "\u2019") for p in _parts)
_table["\u2018s"] = ("\u2018s",)
_table["\u2018S"] = ("\u2018S",)

SPECIAL_CASES: dict[str, tuple[str, ...]] = _table
