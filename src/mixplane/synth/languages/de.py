"""German: gendered nouns with definite and indefinite articles in three cases.

Adjectives are stored as stems and get the weak ending after a definite article and the
mixed ending after an indefinite one, so "der alte Fluss", "den alten Fluss", "ein alter
Fluss" come out right.
"""

from __future__ import annotations

from mixplane.synth.lexicon import Language, entries, gendered, pick

NOUNS = gendered("""
    m:Fluss, f:Stadt, n:Dorf, f:Sprache, f:Geschichte, f:Regierung, f:Gemeinde, n:Netz,
    m:Markt, n:Museum, f:Bibliothek, f:Schule, f:Universität, n:Unternehmen, n:Land,
    f:Region, f:Insel, m:Berg, m:Wald, f:Brücke, f:Eisenbahn, m:Bahnhof, m:Hafen, f:Kirche,
    f:Burg, n:Fest, f:Tradition, f:Wirtschaft, f:Industrie, f:Bevölkerung, f:Forschung,
    f:Theorie, f:Methode, m:Prozess, f:Struktur, n:Element, f:Energie, n:Klima, f:Art,
    m:Garten, m:Hof, f:Fabrik, m:Motor, n:Fahrzeug, m:Rechner, n:Programm, n:Gerät,
    n:Signal, n:Album, n:Lied, m:Film, m:Roman, m:Autor, m:Maler, f:Mannschaft, f:Saison,
    f:Liga, n:Spiel, m:Spieler, m:Trainer, f:Wahl, f:Partei, m:Rat, n:Gesetz, n:Gericht,
    m:Vertrag, n:Heer, f:Schlacht, n:Reich, n:Königreich, f:Provinz, m:Bezirk, f:Grenze,
    f:Küste, n:Tal, m:See, f:Pflanze, n:Tier, m:Vogel, f:Zelle, f:Krankheit,
    n:Krankenhaus, f:Medizin, m:Schüler, m:Lehrer, n:Fach, f:Studie, m:Bericht, m:Artikel,
    f:Zeitung, f:Zeitschrift, m:Sender, n:Gebäude, m:Turm, m:Platz, f:Straße, m:Flughafen,
    n:Schiff, n:Flugzeug, m:Stern, n:Metall, f:Ernte, n:Rezept, n:Restaurant, n:Produkt,
    m:Dienst, m:Kunde, m:Preis, m:Haushalt, n:Projekt, n:Modell, f:Version, m:Kanal,
    n:Kloster, n:Kraftwerk, f:Handelsstraße, n:Rathaus
""")
ADJECTIVES = entries("""
    alt, neu, groß, klein, wichtig, bekannt, modern, historisch, lokal, national, regional,
    öffentlich, privat, früh, spät, zentral, nördlich, südlich, östlich, westlich, beliebt,
    berühmt, selten, traditionell, ländlich, städtisch, natürlich, kulturell, politisch,
    wirtschaftlich, sozial, wissenschaftlich, technisch, digital, einfach, komplex, aktiv,
    unabhängig, offiziell, militärisch, religiös, mittelalterlich, jährlich, stabil,
    effizient, offen, frei, ähnlich, verschieden, schön, stark, schnell, ruhig, breit, lang,
    kurz, reich, still, klar
""")
VERBS = entries("""
    beschreibt, enthält, unterstützt, verbindet, umfasst, erzeugt, benötigt, bietet,
    erreicht, beeinflusst, prägt, beherbergt, kontrolliert, ersetzt, verbessert, reduziert,
    erhöht, erklärt, zeigt, nutzt, baut, schafft, entwickelt, organisiert, schützt, misst,
    untersucht, veröffentlicht, verwaltet, überquert, umgibt, begrenzt, leitet, besitzt,
    ermöglicht, verändert, betrifft, bestimmt, öffnet, trägt
""")
PAST = entries("""
    beschrieb, baute, gründete, eröffnete, veröffentlichte, entdeckte, entwickelte, entwarf,
    ersetzte, erweiterte, restaurierte, zerstörte, erwarb, erreichte, erzeugte, schuf,
    organisierte, beendete, verließ, übernahm, gewann, verlor, prägte, besuchte, kaufte,
    verkaufte, plante, errichtete, verlegte, benannte
""")
ADVERBS = entries("""
    auch, oft, später, noch, meist, weithin, hauptsächlich, selten, allmählich, schnell,
    langsam, kürzlich, ursprünglich, schließlich, derzeit, allgemein, teilweise, vor allem,
    häufig, besonders, zunehmend, offiziell, bereits, heute, damals
""")
PLACES = entries("""
    Berlin, Hamburg, München, Köln, Frankfurt, Stuttgart, Dresden, Leipzig, Bremen,
    Hannover, Nürnberg, Bonn, Freiburg, Heidelberg, Münster, Kiel, Rostock, Wien, Graz,
    Salzburg, Zürich, Bern, Basel, Linz, Augsburg
""")
FIRST_NAMES = entries("""
    Anna, Lukas, Maria, Felix, Sophie, Jonas, Laura, Paul, Lena, Maximilian, Julia, Leon,
    Hannah, Tobias, Katharina, Stefan, Sabine, Jürgen, Monika, Andreas
""")
LAST_NAMES = entries("""
    Müller, Schmidt, Schneider, Fischer, Weber, Meyer, Wagner, Becker, Schulz, Hoffmann,
    Koch, Richter, Klein, Wolf, Schröder, Neumann, Schwarz, Zimmermann, Braun, Krüger
""")
SENTENCES = (
    "{NPA} {V} {ACCA} in {P}.",
    "Im Jahr {Y} {VD} {NP} {ACC} mit {DATA}.",
    "{NP} gilt als {EINA} und {V} {ACC}.",
    "Nach Angaben von {PER} {V} {NP} {D} {ACC}.",
    "{NP} liegt {D} zwischen {DAT} und {DAT}.",
    "Seit {Y} {V} {NP} auch {ACCA}.",
    "Viele Menschen glauben, dass {NP} {ACC} {V}, doch das ist umstritten.",
    "{NP} wurde {Y} von {PER} gegründet und später {D} erweitert.",
    "Es gibt {NUM} Einrichtungen in {DAT}, die {D} von {DAT} genutzt werden.",
    "Mit {DAT} {V} {NP} {ACCA}.",
    "{NP} und {NP} sind {D} {A}.",
    "Zwischen {Y} und {Y} {VD} {NP} insgesamt {NUM} Projekte.",
    "Außerdem {V} {NP} {ACC} und {ACC}.",
    "Das ist {D} der Grund, warum {NP} so {A} ist.",
    "Laut {PER} hat {NP} {ACC} {D} verändert.",
    "Zu den wichtigsten Merkmalen gehören {NP} und {NPA}.",
    "Die meisten Einwohner von {P} arbeiten in {DAT} oder in {DAT}.",
    "Im Laufe der Zeit wurde {NP} {D} {A}.",
    "Bis heute {V} {NP} {ACC} mit {DAT}.",
    "{NPA} wurde im Jahr {Y} zum ersten Mal erwähnt.",
    "Es ist nicht klar, ob {NP} {ACC} {V}.",
    "Heute besuchen jedes Jahr mehr als {NUM} Menschen {ACCA}.",
    "In {DATA} befindet sich {EINA}, der Name stammt aus dem Mittelalter.",
    "Damit {V} {NP} {D} {ACC} von {P}.",
)
CHAT = (
    "Ich habe das gleiche Problem mit {DAT}.",
    "Hat jemand schon {ACCA} aus {P} ausprobiert?",
    "Danke, {FIRST}, das hat bei mir funktioniert!",
    "Ich finde {ACC} {D} {A}, aber {NP} ist besser.",
    "Du musst zuerst {ACC} aktualisieren.",
    "Weiß jemand, warum {NP} {ACC} {V}?",
    "Meiner Erfahrung nach lohnt sich {NPA} nicht.",
    "Wir haben das letztes Jahr mit {DAT} versucht, und es war {A}.",
    "Gibt es eine Möglichkeit, {ACC} besser einzustellen?",
    "Nur meine Meinung: prüf zuerst {ACC}.",
    "Bei mir auch, {NP} funktioniert seit dem Update nicht mehr.",
    "Kannst du ein Foto von {DAT} posten?",
    "Gute Frage, das habe ich mich bei {DAT} auch schon gefragt.",
)
TITLES = ("{NPA}", "{NP} in {P}", "{N} ({P})", "{PER}", "{NP} von {P}")
LEADS = (
    "{TITLE} ist {EINA} in {P}.",
    "{TITLE} bezeichnet {ACCA} in der Region {P}.",
    "{TITLE} ist ein Begriff, der {ACC} und {ACC} beschreibt.",
)
HEADINGS = entries("""
    Geschichte, Geographie, Wirtschaft, Kultur, Etymologie, Beschreibung, Aufbau, Rezeption,
    Nachwirkung, Überblick, Hintergrund, Entwicklung
""")
UI = {
    "home": "Startseite",
    "about": "Über uns",
    "contact": "Kontakt",
    "privacy": "Datenschutz",
    "terms": "Nutzungsbedingungen",
    "cookie": "Wir verwenden Cookies, um Ihnen das beste Erlebnis auf unserer Website zu "
    "bieten. Wenn Sie weiter surfen, stimmen Sie der Verwendung von Cookies zu.",
    "accept": "Akzeptieren",
    "rights": "Alle Rechte vorbehalten.",
    "read_more": "Weiterlesen",
    "by": "Von",
    "related": "Ähnliche Artikel",
    "search": "Suche",
    "news": "Nachrichten",
    "blog": "Blog",
    "login": "Anmelden",
    "share": "Teilen",
    "newsletter": "Newsletter abonnieren",
    "not_found": "Seite nicht gefunden",
    "back": "Zurück zur Startseite",
}
_ARTICLES = {
    "nom": {"m": "der", "f": "die", "n": "das"},
    "acc": {"m": "den", "f": "die", "n": "das"},
    "dat": {"m": "dem", "f": "der", "n": "dem"},
}
_WEAK_ENDINGS = {
    "nom": {"m": "e", "f": "e", "n": "e"},
    "acc": {"m": "en", "f": "e", "n": "e"},
    "dat": {"m": "en", "f": "en", "n": "en"},
}
_INDEFINITE = {"m": ("ein", "er"), "f": ("eine", "e"), "n": ("ein", "es")}


def noun_phrase(case: str, gender: str, noun: str, adjective: str | None = None) -> str:
    """A definite noun phrase in a case.

    Example:
        >>> noun_phrase("acc", "m", "Fluss", "alt")
        'den alten Fluss'
    """
    article = _ARTICLES[case][gender]
    if adjective is None:
        return f"{article} {noun}"
    return f"{article} {adjective}{_WEAK_ENDINGS[case][gender]} {noun}"


def _definite(case: str, with_adjective: bool):
    def slot(language: Language, rng, topic) -> str:
        gender, noun = language.noun(rng, topic)
        adjective = pick(rng, language.adjectives) if with_adjective else None
        return noun_phrase(case, gender, noun, adjective)

    return slot


def _indefinite(with_adjective: bool):
    def slot(language: Language, rng, topic) -> str:
        gender, noun = language.noun(rng, topic)
        article, ending = _INDEFINITE[gender]
        if not with_adjective:
            return f"{article} {noun}"
        return f"{article} {pick(rng, language.adjectives)}{ending} {noun}"

    return slot


LANGUAGE = Language(
    code="de",
    spaced=True,
    nouns=NOUNS,
    adjectives=ADJECTIVES,
    verbs=VERBS,
    past=PAST,
    adverbs=ADVERBS,
    places=PLACES,
    first_names=FIRST_NAMES,
    last_names=LAST_NAMES,
    sentences=SENTENCES,
    chat=CHAT,
    titles=TITLES,
    leads=LEADS,
    headings=HEADINGS,
    ui=UI,
    extra_slots={
        "NP": _definite("nom", False),
        "NPA": _definite("nom", True),
        "ACC": _definite("acc", False),
        "ACCA": _definite("acc", True),
        "DAT": _definite("dat", False),
        "DATA": _definite("dat", True),
        "EIN": _indefinite(False),
        "EINA": _indefinite(True),
    },
)
