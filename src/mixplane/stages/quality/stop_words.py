"""Stop words per language, for the Gopher rule that prose contains a few of them.

Gopher's rule (Rae et al., 2021) asks for at least two of eight English words ("the", "be",
"to", "of", "and", "that", "have", "with"); text in another language almost never has them.
As FineWeb-2 does per language, each list here holds a language's most frequent function
words (articles, conjunctions, prepositions, common forms of "be" and pronouns), lower case
as they appear inside a sentence, so that a real page of that language contains several.
They were written for mixplane from knowledge of each language, not copied from a list.
Most were checked on real text, the translated manual pages and message catalogs of a
Debian system (`bench/filters/technical_prose.py`, `bench/filters/stop_word_coverage.py`);
where no text of a language was at hand the list is from knowledge only: Acehnese,
Bashkir, Central Bikol, Extremaduran, Guadeloupean and Guianese Creole, Konkani, Ancient
Greek, Biblical Hebrew, Guarani, Gun, Haitian, Javanese, Kikuyu, Latin, Luxembourgish,
Ligurian, Latgalian, Maltese, Oromo, Nigerian Pidgin, Quechua, Kinyarwanda, Sanskrit,
Northern Sami, Shona, Somali, Southern Sotho, Swahili, Urdu, Venetian, Volapük, and Tatar
in Cyrillic.

Tokens are matched whole and case-sensitively, as the word splitter cuts them (Maltese
"il-" and "ta'" count as "il" and "ta"; Biblical Hebrew words joined by a maqaf do not
count). Words are written in NFC; each also counts in the spellings real text often has
instead (Indic letters with nukta as one code point, Malayalam chillu letters the way text
before Unicode 5.1 writes them). Text of languages written without spaces is split into
characters: Chinese and Japanese lists are single characters (particles and function
characters); Thai, Lao, Khmer, Burmese and Dzongkha have no list, since a single character
is no word there.

Codes are those the `langid` stage writes, which folds regional varieties into their
language: Egyptian and Moroccan Arabic are `ar` (whose list has their relative "اللي"),
Cantonese and Wu are `zh` (whose list has the traditional forms 這 個 and Cantonese's own
嘅 係 唔 喺; Wu shares 是 个 了 有 一 with Mandarin), Southern Kurdish is `ku` (whose list
has Kurmanji in Latin and Sorani in Arabic script), Southern Uzbek is `uz` (its Arabic
script is not covered). A language without a list gets no stop-word check (the stage
records why), rather than a drop: besides those five, `zxx` (no linguistic content, no
words to count) and Fulfulde (`ff`), whose function words we do not know well enough to
write a list a real page would match.

Example:
    >>> "und" in STOP_WORDS["de"], len(STOP_WORDS["en"])
    (True, 8)
"""

from __future__ import annotations

import unicodedata

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
    # Romance, Latin, French-based creoles, constructed languages
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
    "an": "de a o e y que en no os as ye un una con se lo ta pa d'o d'a",
    "ext": "de la el que i y en a los las es un una pol con no se pa",
    "lij": "o a i e de do che in pe un unna no se l'é da ciù con",
    "vec": "el la i e de che in a co par no xe un na se łe ła dei del come",
    "wa": "li les do di et a è on ene est nén pol po ki avou so ça cwand del des",
    "ht": "ak nan la pou li ki pa yo se sa yon nou te ap gen mwen tout sou men",
    "gcf": "an é la sé ki pa on ka pou nou yo i ni té épi di ou sa",
    "gcr": "ki an é pa sa la pou ka té yé so li nou di ké épi ou",
    "vo": "e ed in binon su ko de pro no u äs kel kela at et bal ma",
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
    # Baltic, Finno-Ugric
    "lt": "ir yra kad su į iš o bet tai per kaip ar nuo jo buvo už",
    "lv": "un ir ar par no uz kas ka lai bet arī tas to nav",
    "ltg": "i ir ar nu ka kai bet jo da uz ari tys par ni voi vys",
    "se": "ja lea ahte dahje ii go dat dan maid mii leat son nu ge gos vel de eai",
    "fi": "ja on ei että se oli hän mutta kun tai myös ovat tämä joka",
    "et": "ja on ei et see ka oli kui ta aga mis ning või",
    "hu": "a az és hogy nem is egy van meg de csak ez el mint",
    # Celtic, Albanian, Greek, Armenian, Georgian, Basque
    "cy": "y yr a ac yn i o ar mae ei gan am yw",
    "ga": "an na agus ar is a i le ag go sé ní don",
    "gd": "agus an na a air anns aig gu ann e tha is ri le bha nach ach seo sin mar",
    "br": "ar an al ha hag e da eo a en ur un ul evit gant war ne met pe ez",
    "grc": "καὶ δὲ τὸ τοῦ τῶν ἐν ὁ ἡ τὴν τῆς γὰρ μὲν οὐ εἰς τὸν τὰ ἐπὶ πρὸς ὡς ἀλλὰ",
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
    "crh": "ve bir bu da de içün ile olğan yoq amma ya kibi ki o bar daa soñ ise olaraq yaki",
    "tk": "we bilen üçin bu hem bir däl ýok bar ol şol edip diýip boýunça has ýaly bolup soň "
    "eger içinde",
    "ky": "жана менен бул үчүн да дагы ал бир деп болуп же эмес бар жок тарабынан анын болгон",
    "tt": "һәм белән өчен да дә бу ул бер шул яки түгел юк бар дип буенча аның булып инде гына ә",
    "ba": "һәм менән был ул өсөн да дә та тә ә йәки юҡ бар түгел буйынса бер ҙа ҙә",
    "ug": "ۋە بىلەن ئۈچۈن بۇ بىر ئۇ ياكى ئەمەس بار يوق دەپ بولۇپ ھەم شۇ ئارقىلىق كېيىن ھەمدە "
    "ئەگەر ئەڭ باشقا",
    # Afro-Asiatic (Semitic, Berber, Cushitic, Chadic), Iranian, Indic
    "ar": "في من على إلى أن عن مع هذا التي الذي ما لا هذه كان اللي",
    "am": "እና ላይ ውስጥ ወደ ግን ይህ ወይም እንደ ጋር ሲሆን ነው ናቸው ሁሉ ይህን እንዲሁም የሆነ ከዚህ በዚህ",
    "ha": "da a na ta ya ba ne ce wannan cikin kuma don su shi ga za ko amma wanda zuwa",
    "om": "fi kan irratti keessatti akka yoo garuu kun sun ykn ni hin keessa waliin itti kana isaa",
    "so": "iyo ka in ku oo waa u la ee ay aan ah uu ayaa soo si mid wax ama",
    "kab": "n d deg i ur ad akken s ara si di seg ɣer am yal kan ɣef neɣ ma",
    "mt": "u il l ta tal li fi fil minn ma huwa hija jew biex dan din kif mhux ukoll għal",
    "he": "של את על זה לא עם הוא גם כי אם או היא אין יש כל אל כדי בין רק עוד אשר",
    # Biblical Hebrew, as langid sees it: with vowel points (unpointed text is labelled he).
    "hbo": "כִּי אֲשֶׁר לֹא הוּא אֵת אֶת אֶל עַל כָּל כֹּל מִן עַד אִם גַּם הִוא זֶה לוֹ אֵין וְלֹא",
    "fa": "و در به از که این را با است برای آن یک",
    "tg": "ва дар ба аз ки ин бо барои аст он ё як мебошад нест низ то вай ҳам агар ҳамчун",
    "ps": "د او په چې له دا سره ته کې هم يو یو لپاره دي وي نه څخه يا یا که",
    "ku": "û di de ji li bi ku ev wê ne yan yê jî da bo heye "
    "و لە بە بۆ کە ئەم ئەو یان لەگەڵ هەیە نییە هەموو ئەگەر",  # Kurmanji and Sorani
    "ur": "کے میں کی ہے اور سے کا کو نے یہ پر ہیں",
    "hi": "के है में की और से का को पर यह हैं भी नहीं एक कि या लिए",
    "sa": "च न तु एव अपि इति वा सः तत् यत् हि इव तथा अस्ति तस्य यः अत्र सह",
    "gom": "आनी हें आसा जाल्यार पूण ही तो ती हो एक खातीर वा ना म्हूण आसात कडेन ह्या",
    "pa": "ਦੇ ਦੀ ਦਾ ਨੂੰ ਵਿੱਚ ਅਤੇ ਹੈ ਹਨ ਤੋਂ ਨੇ ਇਸ ਉਹ ਕਿ ਲਈ ਜਾਂ ਨਹੀਂ ਇੱਕ ਵੀ ਇਹ ਨਾਲ",
    "gu": "અને છે આ તે પણ કે એક હતું માટે નથી જે તો અથવા હોય હતા છો કરી કરવા પર સાથે",
    "mr": "आणि आहे या व हे की ते होते आहेत केले नाही किंवा मध्ये ही",
    "ne": "र छ को मा पनि यो गर्न हो भएको छन् लागि तथा वा तर लाई",
    "as": "আৰু এই হয় কৰা বা যি নাই পৰা বাবে হৈছে কিন্তু সেই এটা তেওঁ নহয় আছে লগত কৰি হ'ব সৈতে",
    "or": "ଓ ଏବଂ ଏହି ସେ କରି ପାଇଁ ହୋଇ ଅଛି ନାହିଁ କିମ୍ବା ଯେ ଏକ କିନ୍ତୁ ଥିଲା ଉପରେ ସହିତ ହେଉଛି ଯଦି କୌଣସି ଏହା",
    "si": "සහ හා මෙම ඒ එය බව නොවේ සඳහා විසින් ද වේ හෝ නමුත් ඇති කර නැත වන තුළ ඇත ලෙස",
    "bn": "এবং ও এই করে হয় থেকে না যে একটি জন্য তার এর করা নয় অথবা মধ্যে দ্বারা নেই কোনো",
    "te": "మరియు ఈ ఆ ఒక లేదా కాదు కూడా అని ఉంది లేదు కోసం కానీ అది ఇది వారు నుండి యొక్క కొరకు ద్వారా మాత్రమే",
    "kn": "ಮತ್ತು ಈ ಆ ಒಂದು ಅಥವಾ ಇದು ಅದು ಎಂದು ಇಲ್ಲ ಆಗಿದೆ ಇದೆ ಹಾಗೂ ಅವರು ಕೂಡ ಆದರೆ ಬೇಕು ಅಲ್ಲ ಮಾಡಿ ಮೇಲೆ ನಂತರ",
    "ml": "ഒരു ഈ ആ എന്ന അല്ലെങ്കിൽ വേണ്ടി കൂടി എന്നാൽ ഇത് അത് ഉണ്ട് ആണ് ഇല്ല എന്നിവ നിന്ന് കൊണ്ട് എന്ന് നിന്നും",
    "ta": "ஒரு மற்றும் இந்த என்று அவர் இது உள்ள என அந்த போது பல அல்லது இல்லை உள்ளது ஆனால் வேண்டும் உடன்",
    # Southeast Asian, African and American languages written with spaces
    "id": "yang dan di ini dengan untuk dari dalam tidak itu ke pada akan ada adalah",
    "ms": "yang dan di ini dengan untuk dari dalam tidak itu ke pada akan ada adalah ialah",
    "tl": "ang ng sa na at mga ay ko si hindi para ito kung lang",
    "bcl": "an sa nin na asin mga ini kan si dai kun para iyo may ta ako siya",
    "jv": "lan ing sing iku kang ora karo kanggo saka uga iki ana dadi wis menyang marang utawa",
    "ace": "nyang ngon lam bak u keu di hana nyoe nyan ka jeut meunyo jih awak nakeuh saboh",
    "mg": "ny sy amin'ny ary ho tsy dia fa izay an'ny ao io ity na koa ireo no mba ilay raha",
    "vi": "và của là có các không được trong cho những một người với này đã",
    "sw": "na ya wa kwa za la katika ni kuwa cha hiyo hii pia",
    "lg": "na ku mu nti era oba kino ekyo ne nga bwe kya ya wa ba eri ate buli",
    "rw": "na ku mu ko ni cyangwa kandi ya wa bya iyi ibi ntabwo ari kuri ariko nta uko",
    "ki": "na wa ya ma kwa ni nĩ atĩ kana ũrĩa thĩinĩ ũguo ũcio rĩ o ta kũrĩ",
    "ln": "na ya ezali mpo te ba ko ete oyo lokola wana mpe to soki kasi nyonso ye bango moko",
    "sn": "uye ne kuti iri ari ku pa mu ndi zvino asi kana iye izvi ichi uyu zvakare chete",
    "zu": "ukuthi futhi noma kodwa uma ngoba kanye nje kakhulu lapho manje khona lokhu leli kule "
    "na ukuze ukuba kuphela bese",
    "xh": "ukuba kwaye ngoko kodwa okanye na ke nje kuba kakhulu ukuze xa apho lo le nokuba oku "
    "kule ngaba kunye",
    "st": "le ho ka ya e a ke hore tsa sa wa la ba hobane mme ha ena tse joalo",
    "nso": "le go ka ya ga e a ke gore tša sa wa la ba bjalo gomme ge mo tšeo se",
    "ig": "na nke ya ka ọ ndị dị maka ma bụ onye ihe ga gị anyị ha ebe a ahụ mgbe",
    "yo": "ti tí ni ní àti ó sí fún wọ́n kí pé náà láti jẹ́ kò a lórí àwọn nínú yìí",
    "gn": "ha ko pe ha'e ndive upe avei peteĩ rupi guarã umi hína ndaha'éi oĩ opa mba'e",
    "guw": "to po lọ mẹ ma e he nado na dọ lẹ ji sọn sọ wẹ bọ",  # Gun
    "qu": "chay kay hina mana manan manam ichaqa chaypi pay chaymanta kan kanku hinaspa icha "
    "ama ari",
    "pcm": "di dey na wey don say dem go for and no to am e make una wetin",  # Nigerian Pidgin
    # East Asian: single characters (text without spaces is split into characters)
    "zh": "的 是 在 了 和 有 我 这 不 人 一 个 也 中 這 個 嘅 係 唔 喺",
    "ja": "の に は を た が で て と し な も か",
    "ko": "및 수 있는 있다 이 그 것 등 더 또는 대한 위해 있습니다 없습니다 합니다 않습니다 때 중",
}


def _precomposed_nukta_letters() -> dict[str, str]:
    """Indic letters with a nukta (য়, ड़, ਜ਼, ଡ଼) that NFC writes as letter and nukta, by
    their single code point, which keyboards and much real text use."""
    table = {}
    for code in range(0x0900, 0x0B80):
        parts = unicodedata.decomposition(chr(code)).split()
        if len(parts) == 2 and parts[1] in ("093C", "09BC", "0A3C", "0B3C"):
            table[chr(int(parts[0], 16)) + chr(int(parts[1], 16))] = chr(code)
    return table


_NUKTA_LETTERS = _precomposed_nukta_letters()
# Malayalam chillu letters (ൽ), as text before Unicode 5.1 writes them: consonant, virama,
# zero-width joiner.
_OLD_CHILLU = {
    chillu: base + "\u0d4d\u200d" for chillu, base in zip("ൺൻർൽൾൿ", "ണനരലളക", strict=True)
}


def spellings(word: str) -> set[str]:
    """`word` as the lists write it (NFC) and as real text often spells it instead.

    Example:
        >>> sorted(spellings("নহয়")) == sorted(["নহয়", "নহ\u09df"])
        True
    """
    found = {word}
    composed = word
    for pair, letter in _NUKTA_LETTERS.items():
        composed = composed.replace(pair, letter)
    found.add(composed)
    found.add("".join(_OLD_CHILLU.get(char, char) for char in word))
    return found


STOP_WORDS: dict[str, frozenset[str]] = {
    code: frozenset(spelling for word in words.split() for spelling in spellings(word))
    for code, words in _LISTS.items()
}
