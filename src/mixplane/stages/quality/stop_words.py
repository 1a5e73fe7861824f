"""Stop words per language, for the Gopher rule that prose contains a few of them.

Gopher's rule (Rae et al., 2021) asks for at least two of eight English words ("the", "be",
"to", "of", "and", "that", "have", "with"); text in another language almost never has them.
As FineWeb-2 does per language, each list here holds a language's most frequent function
words (articles, conjunctions, prepositions, common forms of "be" and pronouns), lower case
as they appear inside a sentence, so that a real page of that language contains several.
They were written for mixplane from knowledge of each language, not copied from a list,
and checked on real text (translated manual pages and message catalogs of a Debian system:
`bench/filters/technical_prose.py`).

Tokens are matched whole and case-sensitively, as the word splitter cuts them. Text of
languages written without spaces is split into characters: Chinese and Japanese lists are
single characters (particles and function characters); Thai, Lao, Khmer, Burmese and
Tibetan have no list, since a single character is no word there.

Codes are those the `langid` stage writes. A language without a list gets no stop-word
check (the stage records why), rather than a drop.

Example:
    >>> "und" in STOP_WORDS["de"], len(STOP_WORDS["en"])
    (True, 8)
"""

from __future__ import annotations

# The eight English words of the Gopher paper.
GOPHER_ENGLISH = ("the", "be", "to", "of", "and", "that", "have", "with")

_LISTS = {
    "en": " ".join(GOPHER_ENGLISH),
    # Germanic
    "de": "der die und in den von zu das mit sich des auf für ist nicht ein eine es",
    "nl": "de en van het een in is dat op te zijn voor met niet die",
    "af": "die en van in is het dat op nie te vir met word ook",
    "fy": "de en fan it in is dat op te foar mei net yn",
    "lb": "an vun der ass den mat fir op am net eng och",
    "sv": "och i att det som en på är av för med till den har inte om",
    "da": "og i at det er en til på af med for de den som ikke har",
    "no": "og i er det som på en til av for med at har ikke den",
    "nn": "og i er det som på ein til av for med at har ikkje dei",
    "is": "og að í á er sem um til við með ekki var en það",
    "fo": "og at í á er sum til við ikki tað hann hon",
    # Romance and Latin
    "fr": "le la les de des et est que un une en du pour dans qui pas sur au il",
    "es": "de la que el en y a los se del las un por con no una para es",
    "pt": "de a o que e do da em um para é com não uma os no se na por",
    "it": "di e il la che a per un in è non del con una le si",
    "ca": "de la i el que a en per les del amb es un una no els",
    "gl": "de a o que e do da en un para é con non unha os no se na por",
    "oc": "de la e lo que a en los per las del es un una pas",
    "ro": "de și şi în la a cu care pe nu să din o este un pentru",
    "la": "et in est non ad cum ut quod de sed qui quae esse",
    "eo": "la kaj de en estas al por ke ne kun el oni",
    # Slavic
    "ru": "и в не на что с по как это к а из для он от у о",
    "uk": "і в на не що з та до у й це як для за від",
    "be": "і у ў на не з што да гэта як па для ад",
    "bg": "и на в за да се с от не е че по са",
    "mk": "и на во за да се со од не е што ги ја",
    "sr": "и у је да се на за су од са не као i u je da se na za su od sa ne kao",
    "hr": "i je u na se da za su od s koji a ne o",
    "bs": "i je u na se da za su od s koji a ne o",
    "sl": "in je v na se za da so z ki pa ne tudi",
    "cs": "a se v na je že to s z do o k pro i by",
    "sk": "a sa v na je že to s z do o k pre ako aj",
    "pl": "i w z na się nie do to że jest o jak a po od dla",
    # Baltic, Finnic, Hungarian
    "lt": "ir yra kad su į iš o bet tai per kaip ar nuo jo buvo už",
    "lv": "un ir ar par no uz kas ka lai bet arī tas to nav",
    "fi": "ja on ei että se oli hän mutta kun tai myös ovat tämä joka",
    "et": "ja on ei et see ka oli kui ta aga mis ning või",
    "hu": "a az és hogy nem is egy van meg de csak ez el mint",
    # Celtic, Albanian, Greek, Armenian, Georgian, Basque
    "cy": "y yr a ac yn i o ar mae ei gan am yw",
    "ga": "an na agus ar is a i le ag go sé ní don",
    "sq": "të e në dhe për një me që nga është i së u se",
    "el": "και το να η της την με του σε για που των ο στο είναι",
    "hy": "և է որ են այդ իր այս նաև համար մի էր ու",
    "ka": "და არის რომ ეს არ ის ან თუ მაგრამ ამ უნდა ვერ არა მხოლოდ",
    "eu": "eta da ez du bat ere dira zen baina edo hau izan dute",
    # Turkic, Mongolian
    "tr": "ve bir bu da de için ile olarak çok daha gibi ne o en olan",
    "az": "və bir bu da də üçün ilə olan ki ən çox isə ya deyil olaraq",
    "kk": "және бұл мен да де үшін бір деп болып оның осы ол емес жоқ бар немесе",
    "uz": "va bu bilan uchun ham bir deb esa eng yoki emas ushbu shu "
    "ва бу билан учун ҳам бир деб эса ёки эмас ушбу шу",  # Latin and Cyrillic
    "mn": "нь юм бол болон энэ байна гэж ба байгаа эсвэл байх",
    # Semitic, Iranian, Indic
    "ar": "في من على إلى أن عن مع هذا التي الذي ما لا هذه كان",
    "he": "של את על זה לא עם הוא גם כי אם או היא אין יש כל אל כדי בין רק עוד אשר",
    "fa": "و در به از که این را با است برای آن یک",
    "ur": "کے میں کی ہے اور سے کا کو نے یہ پر ہیں",
    "hi": "के है में की और से का को पर यह हैं भी नहीं एक कि या लिए",
    "mr": "आणि आहे या व हे की ते होते आहेत केले नाही किंवा मध्ये ही",
    "ne": "र छ को मा पनि यो गर्न हो भएको छन् लागि तथा वा तर लाई",
    "bn": "এবং ও এই করে হয় থেকে না যে একটি জন্য তার এর করা নয় অথবা মধ্যে দ্বারা নেই কোনো",
    "ta": "ஒரு மற்றும் இந்த என்று அவர் இது உள்ள என அந்த போது பல அல்லது இல்லை உள்ளது ஆனால் வேண்டும் உடன்",
    # Southeast Asian and African languages written with spaces
    "id": "yang dan di ini dengan untuk dari dalam tidak itu ke pada akan ada adalah",
    "ms": "yang dan di ini dengan untuk dari dalam tidak itu ke pada akan ada adalah ialah",
    "tl": "ang ng sa na at mga ay ko si hindi para ito kung lang",
    "vi": "và của là có các không được trong cho những một người với này đã",
    "sw": "na ya wa kwa za la katika ni kuwa cha hiyo hii pia",
    # East Asian: single characters (text without spaces is split into characters)
    "zh": "的 是 在 了 和 有 我 这 不 人 一 个 也 中",
    "ja": "の に は を た が で て と し な も か",
    "ko": "및 수 있는 있다 이 그 것 등 더 또는 대한 위해 있습니다 없습니다 합니다 않습니다 때 중",
}

STOP_WORDS: dict[str, frozenset[str]] = {
    code: frozenset(words.split()) for code, words in _LISTS.items()
}
