"""Captions that describe a scene, in English, German, French and Spanish.

A caption names up to three groups of shapes with their colours and counts, the background
(gradient or plain), grain and the word drawn in the image, with an optional lead-in and
sometimes a sentence of context, so lengths vary from a few words to a few sentences.
Grammar is handled per language: articles by gender, adjective endings (German) and
agreement after the noun (French, Spanish).

Example:
    >>> import random
    >>> from mixplane.synth.images.scene import draw_scene
    >>> scene = draw_scene(random.Random(2), 200, 150)
    >>> caption = describe(scene, "en", random.Random(3))
    >>> isinstance(caption, str) and len(caption.split()) > 2
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from mixplane.synth.images.scene import Scene
from mixplane.synth.languages import LANGUAGES
from mixplane.synth.lexicon import capitalize, pick
from mixplane.synth.pii import email
from mixplane.synth.prose import sentences

CAPTION_LANGUAGES = {"en": 0.5, "de": 0.17, "fr": 0.17, "es": 0.16}
MAX_GROUPS = 3


@dataclass(frozen=True)
class Words:
    """One language's words for scenes. Nouns are `(gender, singular, plural)`; colours
    carry the forms the language's grammar needs."""

    shapes: dict[str, tuple[str, str, str]]
    colours: dict[str, tuple[str, ...]]
    numbers: tuple[str, ...]  # two to six
    articles: dict[str, str]  # by gender
    and_: str
    gradient: str  # with {a} and {b}
    plain: str  # with {a}
    grain: str
    word: str  # with {w}
    lead_ins: tuple[str, ...]
    short: tuple[str, ...]
    credit: str  # with {email}


EN = Words(
    shapes={
        "circle": ("n", "circle", "circles"),
        "square": ("n", "square", "squares"),
        "triangle": ("n", "triangle", "triangles"),
        "ellipse": ("n", "ellipse", "ellipses"),
        "star": ("n", "star", "stars"),
        "rectangle": ("n", "rectangle", "rectangles"),
    },
    colours={
        name: (name,)
        for name in (
            "red",
            "green",
            "blue",
            "yellow",
            "orange",
            "purple",
            "white",
            "black",
            "grey",
            "pink",
            "brown",
        )
    },  # fmt: skip
    numbers=("two", "three", "four", "five", "six"),
    articles={"n": "a"},
    and_="and",
    gradient="on a {a} to {b} gradient",
    plain="on a plain {a} background",
    grain="with a grainy texture",
    word='and the word "{w}"',
    lead_ins=(
        "",
        "",
        "A picture of ",
        "Abstract illustration: ",
        "Photo of ",
        "Digital art showing ",
    ),
    short=("image", "photo", "untitled", "abstract art", "IMG"),
    credit="Photo credit: {email}",
)
# German colours: stem (for endings), noun (for the gradient).
DE = Words(
    shapes={
        "circle": ("m", "Kreis", "Kreise"),
        "square": ("n", "Quadrat", "Quadrate"),
        "triangle": ("n", "Dreieck", "Dreiecke"),
        "ellipse": ("f", "Ellipse", "Ellipsen"),
        "star": ("m", "Stern", "Sterne"),
        "rectangle": ("n", "Rechteck", "Rechtecke"),
    },
    colours={
        "red": ("rot", "Rot"),
        "green": ("grün", "Grün"),
        "blue": ("blau", "Blau"),
        "yellow": ("gelb", "Gelb"),
        "orange": ("orangefarben", "Orange"),
        "purple": ("violett", "Violett"),
        "white": ("weiß", "Weiß"),
        "black": ("schwarz", "Schwarz"),
        "grey": ("grau", "Grau"),
        "pink": ("rosafarben", "Rosa"),
        "brown": ("braun", "Braun"),
    },
    numbers=("zwei", "drei", "vier", "fünf", "sechs"),
    articles={"m": "ein", "f": "eine", "n": "ein"},
    and_="und",
    gradient="auf einem Farbverlauf von {a} zu {b}",
    plain="auf {a}em Hintergrund",
    grain="mit körniger Textur",
    word="und das Wort „{w}“",
    lead_ins=("", "", "Bild: ", "Abstrakte Grafik: ", "Foto: ", "Zu sehen: "),
    short=("Bild", "Foto", "ohne Titel", "Grafik"),
    credit="Foto: {email}",
)
# French and Spanish colours: masculine, feminine, masculine plural, feminine plural.
FR = Words(
    shapes={
        "circle": ("m", "cercle", "cercles"),
        "square": ("m", "carré", "carrés"),
        "triangle": ("m", "triangle", "triangles"),
        "ellipse": ("f", "ellipse", "ellipses"),
        "star": ("f", "étoile", "étoiles"),
        "rectangle": ("m", "rectangle", "rectangles"),
    },
    colours={
        "red": ("rouge", "rouge", "rouges", "rouges"),
        "green": ("vert", "verte", "verts", "vertes"),
        "blue": ("bleu", "bleue", "bleus", "bleues"),
        "yellow": ("jaune", "jaune", "jaunes", "jaunes"),
        "orange": ("orange", "orange", "orange", "orange"),
        "purple": ("violet", "violette", "violets", "violettes"),
        "white": ("blanc", "blanche", "blancs", "blanches"),
        "black": ("noir", "noire", "noirs", "noires"),
        "grey": ("gris", "grise", "gris", "grises"),
        "pink": ("rose", "rose", "roses", "roses"),
        "brown": ("marron", "marron", "marron", "marron"),
    },
    numbers=("deux", "trois", "quatre", "cinq", "six"),
    articles={"m": "un", "f": "une"},
    and_="et",
    gradient="sur un fond dégradé {a} et {b}",
    plain="sur fond {a}",
    grain="avec une texture granuleuse",
    word="et le mot « {w} »",
    lead_ins=("", "", "Image : ", "Illustration abstraite : ", "Photo : ", "On y voit "),
    short=("image", "photo", "sans titre", "illustration"),
    credit="Crédit photo : {email}",
)
ES = Words(
    shapes={
        "circle": ("m", "círculo", "círculos"),
        "square": ("m", "cuadrado", "cuadrados"),
        "triangle": ("m", "triángulo", "triángulos"),
        "ellipse": ("f", "elipse", "elipses"),
        "star": ("f", "estrella", "estrellas"),
        "rectangle": ("m", "rectángulo", "rectángulos"),
    },
    colours={
        "red": ("rojo", "roja", "rojos", "rojas"),
        "green": ("verde", "verde", "verdes", "verdes"),
        "blue": ("azul", "azul", "azules", "azules"),
        "yellow": ("amarillo", "amarilla", "amarillos", "amarillas"),
        "orange": ("naranja", "naranja", "naranjas", "naranjas"),
        "purple": ("morado", "morada", "morados", "moradas"),
        "white": ("blanco", "blanca", "blancos", "blancas"),
        "black": ("negro", "negra", "negros", "negras"),
        "grey": ("gris", "gris", "grises", "grises"),
        "pink": ("rosa", "rosa", "rosas", "rosas"),
        "brown": ("marrón", "marrón", "marrones", "marrones"),
    },
    numbers=("dos", "tres", "cuatro", "cinco", "seis"),
    articles={"m": "un", "f": "una"},
    and_="y",
    gradient="sobre un degradado de {a} a {b}",
    plain="sobre fondo {a}",
    grain="con textura granulada",
    word="y la palabra «{w}»",
    lead_ins=("", "", "Imagen: ", "Ilustración abstracta: ", "Foto: ", "Se ve "),
    short=("imagen", "foto", "sin título", "ilustración"),
    credit="Foto: {email}",
)
WORDS = {"en": EN, "de": DE, "fr": FR, "es": ES}
_DE_ENDINGS = {"m": "er", "f": "e", "n": "es"}


def _group(words: Words, code: str, shape: str, colour: str, count: int) -> str:
    gender, singular, plural = words.shapes[shape]
    forms = words.colours[colour]
    if code == "en":
        article = "an" if forms[0][0] in "aeiou" else "a"
        return (
            f"{article} {forms[0]} {singular}"
            if count == 1
            else (f"{words.numbers[count - 2]} {forms[0]} {plural}")
        )
    if code == "de":
        if count == 1:
            return f"{words.articles[gender]} {forms[0]}{_DE_ENDINGS[gender]} {singular}"
        return f"{words.numbers[count - 2]} {forms[0]}e {plural}"
    index = (0 if gender == "m" else 1) + (0 if count == 1 else 2)
    if count == 1:
        return f"{words.articles[gender]} {singular} {forms[index]}"
    return f"{words.numbers[count - 2]} {plural} {forms[index]}"


def _background(words: Words, code: str, scene: Scene) -> str:
    names = scene.background[1:]
    if code == "de":
        forms = [words.colours[n][1] for n in names]
        if scene.background[0] == "plain":
            return words.plain.format(a=words.colours[names[0]][0])
    else:
        forms = [words.colours[n][0] for n in names]
    if scene.background[0] == "gradient":
        return words.gradient.format(a=forms[0], b=forms[1])
    return words.plain.format(a=forms[0])


def describe(scene: Scene, code: str, rng: random.Random) -> str:
    """A caption of `scene` in language `code`, of varied length."""
    words = WORDS[code]
    groups = [_group(words, code, *group) for group in scene.groups()[:MAX_GROUPS]]
    listed = (
        groups[0] if len(groups) == 1 else f"{', '.join(groups[:-1])} {words.and_} {groups[-1]}"
    )
    parts = [listed, _background(words, code, scene)]
    if scene.grain and rng.random() < 0.7:
        parts.append(words.grain)
    if scene.word is not None and rng.random() < 0.8:
        parts.append(words.word.format(w=scene.word))
    lead = pick(rng, words.lead_ins)
    text = lead + " ".join(parts) if lead else capitalize(" ".join(parts))
    if rng.random() < 0.25:
        language = LANGUAGES[code]
        extra = sentences(language, rng, language.topic(rng), 1 if rng.random() < 0.7 else 2)
        text = f"{text}. {' '.join(extra)}"
    return text


def short_caption(code: str, rng: random.Random) -> str:
    """One or two words: too little to describe anything."""
    return pick(rng, WORDS[code].short)


def with_email(caption: str, code: str, rng: random.Random) -> tuple[str, str]:
    """The caption followed by a photo credit with an e-mail address, and the address."""
    language = LANGUAGES[code]
    address = email(rng, language.person(rng).split()[0], language.person(rng).split()[-1])
    return f"{caption.rstrip('.')}. {WORDS[code].credit.format(email=address)}", address
