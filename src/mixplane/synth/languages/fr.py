"""French: gendered nouns, elision (l'), contractions (du, au) and agreeing adjectives."""

from __future__ import annotations

from mixplane.synth.languages.romance import phrase_slot
from mixplane.synth.lexicon import Language, entries, gendered

NOUNS = gendered("""
    m:fleuve, f:ville, m:village, f:langue, f:histoire, m:gouvernement, f:commune, m:réseau,
    m:marché, m:musée, f:bibliothèque, f:école, f:université, f:entreprise, m:pays,
    f:région, f:île, f:montagne, f:forêt, m:pont, m:chemin de fer, f:gare, m:port, f:église,
    m:château, m:festival, f:tradition, f:économie, f:industrie, f:population, f:recherche,
    f:théorie, f:méthode, m:processus, f:structure, m:élément, f:énergie, m:climat,
    f:espèce, m:jardin, f:ferme, f:usine, m:moteur, m:véhicule, m:ordinateur, m:programme,
    m:appareil, m:signal, m:album, f:chanson, m:film, m:roman, m:auteur, m:peintre,
    f:équipe, f:saison, m:championnat, m:match, m:joueur, m:entraîneur, f:élection,
    m:parti, m:conseil, f:loi, m:tribunal, m:traité, f:armée, f:bataille, m:empire,
    m:royaume, f:province, m:quartier, f:frontière, f:côte, f:vallée, m:lac, f:plante,
    m:animal, m:oiseau, f:cellule, f:maladie, m:hôpital, m:médicament, m:élève,
    m:professeur, f:étude, m:rapport, m:article, m:journal, f:revue, f:chaîne, m:bâtiment,
    f:tour, f:place, f:rue, m:aéroport, m:navire, m:avion, f:planète, f:étoile, m:métal,
    f:récolte, f:recette, m:restaurant, m:produit, m:service, m:client, m:prix, m:budget,
    m:projet, m:modèle, f:version, m:canal, m:monastère, f:centrale, f:route commerciale
""")
ADJECTIVES = tuple(
    tuple(pair.split("/"))
    for pair in entries("""
    important/importante, ancien/ancienne, moderne/moderne, local/locale,
    national/nationale, régional/régionale, public/publique, privé/privée,
    central/centrale, célèbre/célèbre, populaire/populaire, rare/rare,
    traditionnel/traditionnelle, rural/rurale, urbain/urbaine, historique/historique,
    naturel/naturelle, culturel/culturelle, politique/politique, économique/économique,
    social/sociale, scientifique/scientifique, technique/technique, numérique/numérique,
    simple/simple, complexe/complexe, actif/active, indépendant/indépendante,
    officiel/officielle, militaire/militaire, religieux/religieuse, médiéval/médiévale,
    annuel/annuelle, stable/stable, efficace/efficace, ouvert/ouverte, libre/libre,
    original/originale, différent/différente, connu/connue, principal/principale,
    calme/calme, étroit/étroite, vaste/vaste
""")
)
VERBS = entries("""
    décrit, contient, soutient, relie, comprend, produit, nécessite, offre, suit,
    représente, couvre, atteint, influence, accueille, sert, contrôle, remplace, améliore,
    réduit, augmente, explique, montre, utilise, construit, crée, développe, organise,
    protège, mesure, étudie, publie, gère, traverse, entoure, dirige, possède, permet,
    change, définit, ouvre
""")
PAST = entries("""
    a décrit, a construit, a fondé, a ouvert, a publié, a introduit, a découvert,
    a développé, a conçu, a remplacé, a agrandi, a restauré, a détruit, a acquis,
    a enregistré, a gagné, a perdu, a rejoint, a atteint, a produit, a créé, a organisé,
    a achevé, a lancé, a annoncé, a fermé, a visité, a renommé
""")
ADVERBS = entries("""
    aussi, souvent, plus tard, encore, généralement, largement, principalement, rarement,
    progressivement, rapidement, lentement, récemment, initialement, finalement,
    actuellement, en partie, surtout, fréquemment, officiellement, également, déjà,
    toujours
""")
PLACES = entries("""
    Paris, Lyon, Marseille, Toulouse, Nice, Nantes, Strasbourg, Montpellier, Bordeaux, Lille,
    Rennes, Reims, Grenoble, Dijon, Angers, Nîmes, Brest, Tours, Limoges, Amiens, Genève,
    Lausanne, Bruxelles, Liège, Québec
""")
FIRST_NAMES = entries("""
    Jean, Marie, Pierre, Sophie, Louis, Camille, Nicolas, Julie, Antoine, Claire, Thomas,
    Élise, Hugo, Chloé, Mathieu, Manon, Julien, Léa, François, Isabelle
""")
LAST_NAMES = entries("""
    Martin, Bernard, Dubois, Thomas, Robert, Richard, Petit, Durand, Leroy, Moreau, Simon,
    Laurent, Lefebvre, Michel, Garcia, David, Bertrand, Roux, Vincent, Fournier
""")
SENTENCES = (
    "{NPA} {V} {NP} de {P}.",
    "En {Y}, {NP} {VD} {UNA} près de {P}.",
    "Selon {PER}, {NP} {V} {NPA} et {V} {NP}.",
    "{NP} se trouve {D} entre {NP} et {NP}.",
    "Aujourd'hui, {NP} accueille plus de {NUM} visiteurs chaque année.",
    "Il existe {NUM} bâtiments dans {NP}, et chacun d'entre eux {V} {UN}.",
    "Pendant cette période, {NP} {VD} une partie {DE}.",
    "Ce lieu est connu pour {NPA} et pour {NPA}.",
    "Depuis {Y}, de nombreux visiteurs viennent {AU} pour voir {NP}.",
    "{PER} {VD} {NP} en {Y}, avec le soutien {DE}.",
    "{NP} et {NP} sont {D} très connus dans la région.",
    "Le nom vient {DE}, qui était {D} utilisé dans la région.",
    "Par conséquent, {NP} {VD} {NP} {DE}.",
    "Certains pensent que {NP} {V} {NP}, mais cela reste {D} discuté.",
    "Entre {Y} et {Y}, {NP} {VD} {NUM} projets.",
    "Avec le développement {DE}, {NP} {V} {UNA}.",
    "{NP} {V} {NP}, et il est {D} lié {AU}.",
    "C'est pourquoi {NP} {V} {D} {NP} de {P}.",
    "Dans {NPA}, on trouve {UN} et {UNA}.",
    "La plupart des habitants de {P} travaillent dans {NP} ou dans {NP}.",
    "{NP} a été mentionné pour la première fois en {Y}.",
    "Il n'est pas certain que {NP} {V} {NP}.",
    "Au cours des années suivantes, {NP} {VD} {NPA} avec l'aide {DE}.",
    "Il s'agit {DE} qui {V} le mieux {NP} de la région.",
)
CHAT = (
    "J'ai le même problème avec {NP}.",
    "Quelqu'un a déjà essayé {NPA} de {P} ?",
    "Merci {FIRST}, ça a marché pour moi !",
    "Je pense que {NP} est {D} utile, mais {NP} est mieux.",
    "Il faut d'abord mettre à jour {NP}.",
    "Quelqu'un sait pourquoi {NP} {V} {NP} ?",
    "D'après mon expérience, {NPA} ne vaut pas le coup.",
    "On a essayé avec {NP} l'année dernière et c'était {A}.",
    "Est-ce qu'il y a un moyen de rendre {NP} plus {A} ?",
    "Moi aussi, {NP} ne marche plus depuis la mise à jour.",
    "Tu peux poster une photo {DE} ?",
    "Bonne question, je me demandais la même chose pour {NP}.",
)
TITLES = ("{NPA}", "{NP} de {P}", "Histoire de {P}", "{PER}", "{N} ({P})")
LEADS = (
    "{TITLE} désigne {UNA} de la région de {P}.",
    "{TITLE} est le nom donné {AU} de {P}.",
    "{TITLE} est un sujet qui concerne {NP} et {NPA}.",
)
HEADINGS = entries("""
    Histoire, Géographie, Économie, Culture, Étymologie, Description, Conception, Réception,
    Héritage, Présentation, Contexte, Développement
""")
UI = {
    "home": "Accueil",
    "about": "À propos",
    "contact": "Contact",
    "privacy": "Politique de confidentialité",
    "terms": "Conditions d'utilisation",
    "cookie": "Nous utilisons des cookies pour améliorer votre expérience sur notre site. "
    "En poursuivant votre navigation, vous acceptez l'utilisation des cookies.",
    "accept": "Accepter",
    "rights": "Tous droits réservés.",
    "read_more": "Lire la suite",
    "by": "Par",
    "related": "Articles similaires",
    "search": "Rechercher",
    "news": "Actualités",
    "blog": "Blog",
    "login": "Se connecter",
    "share": "Partager",
    "newsletter": "Abonnez-vous à notre newsletter",
    "not_found": "Page introuvable",
    "back": "Retour à l'accueil",
}
# Article forms: bare, after "de", after "à" (contracted or elided), indefinite.
_FORMS = {
    "le": {"m": "le ", "f": "la ", "elided": "l'"},
    "de": {"m": "du ", "f": "de la ", "elided": "de l'"},
    "a": {"m": "au ", "f": "à la ", "elided": "à l'"},
    "un": {"m": "un ", "f": "une "},
}


LANGUAGE = Language(
    code="fr",
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
    adjective_word=lambda pair: pair[0],
    extra_slots={
        "NP": phrase_slot(_FORMS["le"], False),
        "NPA": phrase_slot(_FORMS["le"], True),
        "DE": phrase_slot(_FORMS["de"], False),
        "AU": phrase_slot(_FORMS["a"], False),
        "UN": phrase_slot(_FORMS["un"], False),
        "UNA": phrase_slot(_FORMS["un"], True),
    },
)
