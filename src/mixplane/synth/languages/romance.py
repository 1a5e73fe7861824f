"""Noun phrases shared by French and Spanish: article by gender, adjective after the noun."""

from __future__ import annotations

from mixplane.synth.lexicon import Language, pick

ELIDING = "aeiouyhéèêâîôûAEIOUYHÉÈÊÂÎÔÛ"


def article(forms: dict[str, str], gender: str, noun: str) -> str:
    """The article form for a noun; forms with an 'elided' entry use it before a vowel.

    Example:
        >>> article({"m": "le ", "f": "la ", "elided": "l'"}, "f", "école")
        "l'école"
    """
    if "elided" in forms and noun[0] in ELIDING:
        return forms["elided"] + noun
    return forms[gender] + noun


def agreeing(pair: tuple[str, str], gender: str) -> str:
    """The masculine or feminine form of an adjective stored as `(masculine, feminine)`."""
    return pair[1] if gender == "f" else pair[0]


def phrase_slot(forms: dict[str, str], with_adjective: bool):
    """A grammar slot producing e.g. 'la ville ancienne' or 'del río antiguo'."""

    def slot(language: Language, rng, topic) -> str:
        gender, noun = language.noun(rng, topic)
        phrase = article(forms, gender, noun)
        if with_adjective:
            phrase += " " + agreeing(pick(rng, language.adjectives), gender)
        return phrase

    return slot
