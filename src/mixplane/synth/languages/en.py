"""English: plain nouns, a/an articles and regular plurals."""

from __future__ import annotations

from mixplane.synth.lexicon import Language, entries, noun_word, pick

NOUNS = entries("""
    system, city, river, language, history, government, community, network, market, village,
    museum, library, school, university, company, country, region, island, mountain, forest,
    bridge, railway, station, harbor, church, castle, festival, tradition, economy, industry,
    population, theory, method, process, structure, element, energy, climate, species, garden,
    farm, factory, engine, vehicle, computer, program, device, signal, record, album, song,
    film, novel, author, painter, team, season, league, match, player, coach, election, party,
    council, law, court, treaty, army, battle, empire, kingdom, province, district, border,
    coast, valley, lake, desert, plant, animal, bird, insect, protein, cell, disease, hospital,
    medicine, patient, student, teacher, lesson, study, report, article, journal, newspaper,
    magazine, channel, building, tower, square, street, road, airport, ship, aircraft,
    satellite, planet, star, telescope, mineral, metal, crop, harvest, recipe, restaurant,
    product, service, customer, price, budget, policy, project, design, model, version,
    feature, canal, temple, monastery, school board, power plant, water supply, trade route
""")
ADJECTIVES = entries("""
    large, small, old, new, ancient, modern, local, national, regional, public, private,
    important, major, minor, early, late, central, northern, southern, eastern, western,
    popular, famous, common, rare, traditional, industrial, rural, urban, historic, natural,
    cultural, political, economic, social, scientific, technical, digital, simple, complex,
    significant, active, independent, official, military, religious, medieval, coastal,
    annual, seasonal, primary, secondary, visible, stable, efficient, open, free, original,
    similar, different, quiet, busy, narrow, wide
""")
VERBS = entries("""
    describes, contains, supports, connects, includes, produces, requires, provides, follows,
    represents, covers, reaches, influences, shapes, attracts, hosts, serves, controls,
    replaces, improves, reduces, increases, explains, shows, uses, builds, creates, develops,
    organizes, protects, measures, studies, publishes, manages, links, crosses, surrounds,
    borders, joins, leads, features, offers, allows, changes, affects, defines, opens, owns
""")
PAST = entries("""
    described, built, founded, opened, published, introduced, discovered, developed, designed,
    established, replaced, expanded, restored, destroyed, acquired, released, recorded, won,
    lost, joined, moved, reached, produced, created, organized, completed, launched,
    announced, closed, reopened, visited, renamed, rebuilt, studied, mapped, protected
""")
ADVERBS = entries("""
    also, often, later, still, usually, widely, mainly, largely, rarely, gradually, quickly,
    slowly, recently, originally, eventually, currently, generally, partly, primarily,
    typically, formerly, frequently, especially, increasingly, officially
""")
PLACES = entries("""
    London, Boston, Dublin, Sydney, Toronto, Chicago, Denver, Seattle, Glasgow, Manchester,
    Auckland, Oxford, Cambridge, Portland, Austin, Halifax, Perth, Bristol, Leeds, Houston,
    Phoenix, Ottawa, Vancouver, Melbourne, Cardiff, Brighton, York, Adelaide, Calgary, Norfolk
""")
FIRST_NAMES = entries("""
    James, Mary, John, Patricia, Robert, Jennifer, Michael, Linda, William, Elizabeth, David,
    Susan, Richard, Sarah, Thomas, Karen, Daniel, Emily, Matthew, Laura, Anthony, Helen, Mark,
    Rachel, Paul, Grace, Oliver, Chloe, Henry, Ruth
""")
LAST_NAMES = entries("""
    Smith, Johnson, Brown, Taylor, Wilson, Davies, Evans, Clarke, Walker, Wright, Baker,
    Turner, Hill, Cooper, Ward, Morris, Hughes, Carter, Bennett, Mitchell, Parker, Collins,
    Stewart, Murphy, Reed, Fletcher, Hayes, Lambert, Porter, Sutton
""")
SENTENCES = (
    "The {N} {V} the {A} {N} of {P}.",
    "In {Y}, the {N} {VD} {aA} {N} near {P}.",
    "It is one of the most {A} {NS} in the region.",
    "The {N} of {P} has been {D} {VD} by {PER}.",
    "Most of the {NS} that were {VD} in {Y} have since been {VD}.",
    "According to {PER}, the {N} {V} {aA} {N} and {V} the {N}.",
    "There are {NUM} {NS} in the {N}, and each of them {V} {aN}.",
    "The {A} {N} was {VD} in {Y} and {VD} again in {Y}.",
    "During the {A} period, the {N} {D} {VD} the {N} with {aA} {N}.",
    "This {N} is known for its {A} {N} and its {A} {N}.",
    "Today, the {N} {V} more than {NUM} {NS} every year.",
    "The {N} is located {D} between the {N} and the {N}.",
    "Many {NS} have been {VD} to the {N} since {Y}.",
    "{PER} {VD} the {N} in {Y}, with support from the {A} {N}.",
    "The {N} and the {N} are {D} {A}.",
    "It has {aA} {N} that {V} the {A} {N}.",
    "In the {A} {N}, the {N} {V} {D} with the {N}.",
    "The name of the {N} comes from the {A} word for {N}.",
    "As a result, the {N} {D} {VD} its {N} to the {N} of {P}.",
    "Some {NS} believe that the {N} {V} the {N}, but this is {D} disputed.",
    "The {N} has {NUM} {NS}, which {D} serve the {A} {N}.",
    "It was {D} {VD} as {aA} {N} to the {N}.",
    "The {A} {N} of the {N} is one of the {A} {NS} in {P}.",
    "{aN} is {aA} {N} that {V} {aA} {N}.",
    "Between {Y} and {Y}, the {N} {VD} {NUM} {NS}.",
    "The {N} that {V} the {N} was {VD} by {PER} and {PER}.",
    "With the growth of the {N}, the {N} {V} {aA} {N}.",
    "The {N} {V} the {A} {N}, and it is {D} {VD} with the {N}.",
    "For this reason, the {N} {D} {V} the {N} of the {N}.",
    "It is not clear whether the {N} {V} the {N} or the {N}.",
)
CHAT = (
    "I have the same problem with my {N}.",
    "Has anyone tried the {A} {N} from {P}?",
    "Thanks, {FIRST}, that worked for me!",
    "I think the {N} is {D} {A}, but the {N} is better.",
    "You need to update the {N} before you change the {N}.",
    "Does anyone know why the {N} {V} the {N}?",
    "In my experience, the {A} {N} is not worth the money.",
    "We tried this with the {N} last year and it was {A}.",
    "Is there a way to make the {N} more {A}?",
    "Just my two cents: check the {N} first.",
    "Same here, the {N} stopped working after the update.",
    "I would recommend {aA} {N} for that.",
    "Can you post a picture of the {N}?",
    "That is a good question, and I have been wondering about the {N} too.",
)
TITLES = (
    "The {A} {N} of {P}",
    "{P} {N}",
    "History of the {N}",
    "{A} {N}",
    "{PER}",
    "The {N} and the {N}",
    "{N} in {P}",
)
LEADS = (
    "{TITLE} is {aA} {N} in {P}.",
    "{TITLE} was {aA} {N} that {VD} the {N} of {P}.",
    "{TITLE} refers to the {A} {N} of the {N} in {P}.",
)
HEADINGS = entries("""
    History, Geography, Economy, Culture, Etymology, Description, Design, Reception, Legacy,
    Overview, Background, Development
""")
UI = {
    "home": "Home",
    "about": "About us",
    "contact": "Contact",
    "privacy": "Privacy policy",
    "terms": "Terms of use",
    "cookie": "We use cookies to improve your experience on our website. By continuing to "
    "browse, you agree to our use of cookies.",
    "accept": "Accept",
    "rights": "All rights reserved.",
    "read_more": "Read more",
    "by": "By",
    "related": "Related articles",
    "search": "Search",
    "news": "News",
    "blog": "Blog",
    "login": "Log in",
    "share": "Share",
    "newsletter": "Subscribe to our newsletter",
    "not_found": "Page not found",
    "back": "Return to the home page",
}
_PLURAL_EXCEPTIONS = {"species": "species", "aircraft": "aircraft", "policy": "policies"}
_A_BEFORE_VOWEL = ("uni", "use", "euro", "one")


def plural(noun: str) -> str:
    """A regular English plural: 'city' -> 'cities', 'church' -> 'churches'.

    Example:
        >>> [plural(n) for n in ("city", "church", "road", "species")]
        ['cities', 'churches', 'roads', 'species']
    """
    if noun in _PLURAL_EXCEPTIONS:
        return _PLURAL_EXCEPTIONS[noun]
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def with_article(word: str) -> str:
    """'a' or 'an' by sound, for the common cases: 'an island', 'a university'."""
    lowered = word.lower()
    vowel = lowered[:1] in "aeiou" and not lowered.startswith(_A_BEFORE_VOWEL)
    return f"an {word}" if vowel or lowered.startswith("hour") else f"a {word}"


def _plural_noun(language: Language, rng, topic) -> str:
    return plural(noun_word(language.noun(rng, topic)))


def _a_noun(language: Language, rng, topic) -> str:
    return with_article(noun_word(language.noun(rng, topic)))


def _an_adjective(language: Language, rng, topic) -> str:
    return with_article(pick(rng, language.adjectives))


LANGUAGE = Language(
    code="en",
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
    extra_slots={"NS": _plural_noun, "aN": _a_noun, "aA": _an_adjective},
)
