"""Spanish: gendered nouns, contractions (del, al) and agreeing adjectives."""

from __future__ import annotations

from mixplane.synth.languages.romance import phrase_slot
from mixplane.synth.lexicon import Language, entries, gendered

NOUNS = gendered("""
    m:río, f:ciudad, m:pueblo, f:lengua, f:historia, m:gobierno, f:comunidad, f:red,
    m:mercado, m:museo, f:biblioteca, f:escuela, f:universidad, f:empresa, m:país, f:región,
    f:isla, f:montaña, m:bosque, m:puente, m:ferrocarril, f:estación, m:puerto, f:iglesia,
    m:castillo, m:festival, f:tradición, f:economía, f:industria, f:población,
    f:investigación, f:teoría, m:método, m:proceso, f:estructura, m:elemento, f:energía,
    m:clima, f:especie, m:jardín, f:granja, f:fábrica, m:motor, m:vehículo, m:ordenador,
    m:programa, m:aparato, f:señal, m:álbum, f:canción, f:película, f:novela, m:autor,
    m:pintor, m:equipo, f:temporada, f:liga, m:partido, m:jugador, m:entrenador,
    f:elección, m:consejo, f:ley, m:tribunal, m:tratado, m:ejército, f:batalla, m:imperio,
    m:reino, f:provincia, m:distrito, f:frontera, f:costa, m:valle, m:lago, f:planta,
    m:animal, m:pájaro, f:célula, f:enfermedad, m:hospital, m:medicamento, m:estudiante,
    m:profesor, m:estudio, m:informe, m:artículo, m:periódico, f:revista, m:canal,
    m:edificio, f:torre, f:plaza, f:calle, m:aeropuerto, m:barco, m:avión, m:planeta,
    f:estrella, m:metal, f:cosecha, f:receta, m:restaurante, m:producto, m:servicio,
    m:cliente, m:precio, m:presupuesto, m:proyecto, m:modelo, f:versión, m:monasterio,
    f:central eléctrica, f:ruta comercial, m:ayuntamiento
""")
ADJECTIVES = tuple(
    tuple(pair.split("/"))
    for pair in entries("""
    antiguo/antigua, nuevo/nueva, grande/grande, pequeño/pequeña, importante/importante,
    moderno/moderna, local/local, nacional/nacional, regional/regional, público/pública,
    privado/privada, central/central, famoso/famosa, popular/popular, raro/rara,
    tradicional/tradicional, rural/rural, urbano/urbana, histórico/histórica,
    natural/natural, cultural/cultural, político/política, económico/económica,
    social/social, científico/científica, técnico/técnica, digital/digital,
    sencillo/sencilla, complejo/compleja, activo/activa, independiente/independiente,
    oficial/oficial, militar/militar, religioso/religiosa, medieval/medieval, anual/anual,
    estable/estable, eficiente/eficiente, abierto/abierta, libre/libre, original/original,
    diferente/diferente, conocido/conocida, principal/principal, tranquilo/tranquila,
    estrecho/estrecha
""")
)
VERBS = entries("""
    describe, contiene, apoya, conecta, incluye, produce, requiere, ofrece, sigue,
    representa, cubre, alcanza, acoge, sirve, controla, reemplaza, mejora, reduce, aumenta,
    explica, muestra, utiliza, construye, crea, desarrolla, organiza, protege, mide,
    estudia, publica, gestiona, cruza, rodea, dirige, posee, permite, cambia, define, abre,
    recorre
""")
PAST = entries("""
    describió, construyó, fundó, abrió, publicó, introdujo, descubrió, desarrolló, diseñó,
    reemplazó, amplió, restauró, destruyó, adquirió, grabó, ganó, perdió, alcanzó, produjo,
    creó, organizó, completó, lanzó, anunció, cerró, visitó, renombró
""")
ADVERBS = entries("""
    también, a menudo, más tarde, todavía, generalmente, ampliamente, principalmente,
    raramente, gradualmente, rápidamente, lentamente, recientemente, originalmente,
    finalmente, actualmente, en parte, sobre todo, frecuentemente, oficialmente,
    especialmente, ya, siempre
""")
PLACES = entries("""
    Madrid, Barcelona, Valencia, Sevilla, Zaragoza, Málaga, Bilbao, Granada, Córdoba,
    Salamanca, Toledo, Murcia, Alicante, Valladolid, Oviedo, Cádiz, México, Bogotá, Lima,
    Quito, Santiago, Montevideo, Buenos Aires, Caracas, Guadalajara
""")
FIRST_NAMES = entries("""
    José, María, Carlos, Lucía, Javier, Carmen, Miguel, Elena, Antonio, Laura, Manuel, Sofía,
    Pablo, Isabel, Diego, Ana, Alejandro, Marta, Fernando, Paula
""")
LAST_NAMES = entries("""
    García, Fernández, González, Rodríguez, López, Martínez, Sánchez, Pérez, Gómez, Martín,
    Jiménez, Ruiz, Hernández, Díaz, Moreno, Álvarez, Muñoz, Romero, Navarro, Torres
""")
SENTENCES = (
    "{NPA} {V} {NP} de {P}.",
    "En {Y}, {NP} {VD} {UNA} cerca de {P}.",
    "Según {PER}, {NP} {V} {NPA} y {V} {NP}.",
    "{NP} se encuentra {D} entre {NP} y {NP}.",
    "Hoy en día, {NP} recibe más de {NUM} visitantes cada año.",
    "Hay {NUM} edificios en {NP}, y cada uno de ellos {V} {UN}.",
    "Durante ese período, {NP} {VD} una parte {DE}.",
    "El lugar es conocido por {NPA} y por {NPA}.",
    "Desde {Y}, muchos visitantes llegan {AL} para ver {NP}.",
    "{PER} {VD} {NP} en {Y}, con el apoyo {DE}.",
    "{NP} y {NP} son {D} muy conocidos en la región.",
    "El nombre proviene {DE}, que era {D} utilizado en la región.",
    "Por lo tanto, {NP} {VD} {NP} {DE}.",
    "Algunos creen que {NP} {V} {NP}, pero esto sigue siendo {D} discutido.",
    "Entre {Y} y {Y}, {NP} {VD} {NUM} proyectos.",
    "Con el desarrollo {DE}, {NP} {V} {UNA}.",
    "{NP} {V} {NP}, y está {D} relacionado con {NP}.",
    "Por eso {NP} {V} {D} {NP} de {P}.",
    "En {NPA} se encuentran {UN} y {UNA}.",
    "La mayoría de los habitantes de {P} trabajan en {NP} o en {NP}.",
    "{NP} fue mencionado por primera vez en {Y}.",
    "No está claro si {NP} {V} {NP}.",
    "En los años siguientes, {NP} {VD} {NPA} con la ayuda {DE}.",
    "Se trata {DE} que mejor {V} {NP} de la zona.",
)
CHAT = (
    "Tengo el mismo problema con {NP}.",
    "¿Alguien ha probado {NPA} de {P}?",
    "¡Gracias, {FIRST}, a mí me funcionó!",
    "Creo que {NP} es {D} útil, pero {NP} es mejor.",
    "Primero tienes que actualizar {NP}.",
    "¿Alguien sabe por qué {NP} {V} {NP}?",
    "En mi experiencia, {NPA} no vale la pena.",
    "Lo probamos con {NP} el año pasado y fue {A}.",
    "¿Hay alguna forma de hacer {NP} más {A}?",
    "A mí también, {NP} dejó de funcionar después de la actualización.",
    "¿Puedes subir una foto {DE}?",
    "Buena pregunta, yo también me preguntaba lo mismo sobre {NP}.",
)
TITLES = ("{NPA}", "{NP} de {P}", "Historia de {P}", "{PER}", "{N} ({P})")
LEADS = (
    "{TITLE} es {UNA} de la región de {P}.",
    "{TITLE} es el nombre que recibe {NP} de {P}.",
    "{TITLE} es un tema relacionado con {NP} y {NPA}.",
)
HEADINGS = entries("""
    Historia, Geografía, Economía, Cultura, Etimología, Descripción, Diseño, Recepción,
    Legado, Resumen, Contexto, Desarrollo
""")
UI = {
    "home": "Inicio",
    "about": "Quiénes somos",
    "contact": "Contacto",
    "privacy": "Política de privacidad",
    "terms": "Términos de uso",
    "cookie": "Utilizamos cookies para mejorar su experiencia en nuestro sitio web. Si "
    "continúa navegando, acepta el uso de cookies.",
    "accept": "Aceptar",
    "rights": "Todos los derechos reservados.",
    "read_more": "Leer más",
    "by": "Por",
    "related": "Artículos relacionados",
    "search": "Buscar",
    "news": "Noticias",
    "blog": "Blog",
    "login": "Iniciar sesión",
    "share": "Compartir",
    "newsletter": "Suscríbase a nuestro boletín",
    "not_found": "Página no encontrada",
    "back": "Volver a la página de inicio",
}
# Article forms: bare, after "de" and after "a" (both contract with "el"), indefinite.
_FORMS = {
    "el": {"m": "el ", "f": "la "},
    "de": {"m": "del ", "f": "de la "},
    "a": {"m": "al ", "f": "a la "},
    "un": {"m": "un ", "f": "una "},
}


LANGUAGE = Language(
    code="es",
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
        "NP": phrase_slot(_FORMS["el"], False),
        "NPA": phrase_slot(_FORMS["el"], True),
        "DE": phrase_slot(_FORMS["de"], False),
        "AL": phrase_slot(_FORMS["a"], False),
        "UN": phrase_slot(_FORMS["un"], False),
        "UNA": phrase_slot(_FORMS["un"], True),
    },
)
