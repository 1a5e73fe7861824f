"""`gopher_quality` takes its stop words from the document's language: real prose in other
languages passes, as it did not with the English words alone; a language without a list is
not checked for stop words (with the reason recorded) instead of dropped."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import write_jsonl

from mixplane import run_pipeline
from mixplane.document import Document
from mixplane.stages.langid.codes import MODEL_CODES
from mixplane.stages.quality.gopher_quality import GopherQuality
from mixplane.stages.quality.stop_words import _LISTS, STOP_WORDS
from mixplane.stages.text import analyze

# Ordinary prose, a paragraph per language, over the filter's 50 words.
PROSE = {
    "de": "Die kleine Stadt liegt an einem breiten Fluss im Süden des Landes. Im Sommer "
    "kommen viele Besucher, die durch die alten Gassen gehen und auf dem Markt frisches Obst "
    "kaufen. Am Abend sitzen die Menschen vor den Häusern, erzählen sich Geschichten von "
    "früher und sehen zu, wie die Sonne langsam hinter den Hügeln verschwindet.",
    "fr": "La petite ville se trouve au bord d'une large rivière dans le sud du pays. En été, "
    "les visiteurs se promènent dans les vieilles rues et achètent des fruits sur le marché. "
    "Le soir, les habitants restent assis devant leurs maisons, racontent des histoires du "
    "passé et regardent le soleil qui disparaît lentement derrière les collines.",
    "es": "La pequeña ciudad está junto a un río ancho en el sur del país. En verano llegan "
    "muchos visitantes que pasean por las calles antiguas y compran fruta fresca en el "
    "mercado. Por la noche los vecinos se sientan delante de sus casas, cuentan historias de "
    "otros tiempos y miran cómo el sol se esconde despacio detrás de las colinas.",
    "ru": "Маленький город стоит на берегу широкой реки на юге страны. Летом сюда приезжает "
    "много туристов, которые гуляют по старым улицам и покупают на рынке свежие фрукты. "
    "Вечером жители сидят у своих домов, рассказывают истории о прошлом и смотрят, как "
    "солнце медленно уходит за холмы. Для многих это лучшее время дня, и никто не спешит "
    "домой.",
    "tr": "Küçük kasaba ülkenin güneyinde geniş bir nehrin kıyısında bulunuyor. Yazın çok "
    "sayıda ziyaretçi gelir ve eski sokaklarda dolaşarak pazardan taze meyve alır. Akşam "
    "olunca kasaba halkı evlerinin önünde oturur, eski günlerden hikâyeler anlatır ve güneşin "
    "tepelerin ardında yavaşça kaybolmasını izler. Bu saatler için gün boyunca çok çalışırlar "
    "ve akşamı beklerler.",
    "pl": "Małe miasto leży nad szeroką rzeką na południu kraju. Latem przyjeżdża tu wielu "
    "gości, którzy spacerują po starych uliczkach i kupują na targu świeże owoce. Wieczorem "
    "mieszkańcy siedzą przed swoimi domami, opowiadają historie o dawnych czasach i patrzą, "
    "jak słońce powoli znika za wzgórzami. Dla wielu to najlepsza pora dnia i nikt się nie "
    "spieszy do domu.",
    "ht": "Ti vil la chita bò yon gwo rivyè nan sid peyi a. Nan sezon chalè, anpil vizitè "
    "vini pou yo mache nan vye lari yo epi achte fwi fre nan mache a. Lè aswè rive, moun yo "
    "chita devan kay yo, yo rakonte istwa sou tan lontan epi yo gade solèy la k ap disparèt "
    "dousman dèyè mòn yo. Pou anpil moun, se pi bon moman nan jounen an, e pèsonn pa prese "
    "tounen lakay.",
    "jv": "Kutha cilik iku dumunung ing pinggir kali gedhe ing sisih kidul negara. Nalika "
    "mangsa ketiga akeh wong sing teka kanggo mlaku-mlaku ing dalan lawas lan tuku woh-wohan "
    "seger ing pasar. Yen wis sore, warga padha lungguh ing ngarep omahe, crita bab jaman "
    "biyen lan nyawang srengenge sing alon-alon ilang ing mburi gunung. Kanggo akeh wong, "
    "wektu iku wektu sing paling apik lan ora ana sing kesusu mulih.",
    "so": "Magaalada yar waxay ku taal webi weyn oo ku yaal koonfurta dalka. Xilliga kulaylka "
    "waxaa yimaada dad badan oo booqdayaal ah, kuwaas oo ku socda waddooyinka duugga ah, "
    "waxayna ka iibsadaan khudaar iyo miro cusub suuqa. Fiidkii dadka magaalada waxay "
    "fadhiistaan guryahooda hortooda, waxay isu sheegaan sheekooyin ku saabsan waqtiyadii "
    "hore, waxayna daawadaan qorraxda oo si tartiib ah uga dhacaysa buuraha gadaashooda.",
    "gd": "Tha am baile beag na laighe ri taobh abhainn mhòr ann an ceann a deas na dùthcha. "
    "As t-samhradh bidh mòran luchd-tadhail a' tighinn agus a' coiseachd air na seann "
    "sràidean, agus bidh iad a' ceannach measan ùra aig a' mhargadh. Anns an fheasgar bidh "
    "na daoine nan suidhe air beulaibh nan taighean aca, ag innse sgeulachdan mun t-seann "
    "aimsir agus a' coimhead air a' ghrian a' dol fodha air cùl nam beann.",
    "ha": "Ƙaramin garin yana gefen wani babban kogi a kudancin ƙasar. A lokacin zafi baƙi da "
    "yawa suna zuwa don yawo a cikin tsofaffin tituna, kuma su sayi sababbin 'ya'yan itatuwa "
    "a kasuwa. Da yamma mutanen garin suna zaune a gaban gidajensu, suna ba da labarai game da "
    "zamanin da, kuma suna kallon rana tana faɗuwa a hankali a bayan tuddai. Ga mutane da "
    "yawa, wannan shi ne lokaci mafi kyau a rana.",
}
# Cantonese, which langid labels zh: the zh list has its own function characters.
CANTONESE = (
    "呢個細細嘅小鎮喺國家南部一條大河旁邊。夏天嘅時候有好多遊客嚟到，佢哋喺啲舊街度行吓，"
    "又喺街市買啲新鮮生果。到咗夜晚，啲居民就坐喺屋企門口，講吓以前嘅故事，睇住個太陽慢慢喺山後面"
    "落山。對好多人嚟講，呢段時間係一日入面最好嘅，冇人會趕住返屋企。"
)
# No stop-word list: Thai (written without spaces, split into characters).
THAI = (
    "เมืองเล็กๆ แห่งนี้ตั้งอยู่ริมแม่น้ำสายใหญ่ทางภาคใต้ของประเทศ ในฤดูร้อนมีนักท่องเที่ยวมากมาย"
    "มาเดินเล่นตามถนนเก่าและซื้อผลไม้สดที่ตลาด ตอนเย็นชาวบ้านนั่งอยู่หน้าบ้าน เล่าเรื่องในอดีต"
    "และมองดูดวงอาทิตย์ค่อยๆ ลับหายไปหลังเนินเขา"
)


def test_prose_in_other_languages_passes_with_the_documents_language(tmp_path: Path):
    """The README's way: langid, then gopher_quality, with their defaults."""
    records = [{"id": lang, "text": text} for lang, text in PROSE.items()]
    records.append({"id": "th", "text": THAI})
    records.append({"id": "yue", "text": CANTONESE})
    raw = write_jsonl(tmp_path / "raw" / "web" / "a.jsonl", records)
    stages = ["langid", "gopher_quality"]
    result = run_pipeline({"input": str(raw), "output": str(tmp_path / "out"), "stages": stages})
    assert result.stats["excluded"] == 0
    rows = {row["id"]: row for row in pq.read_table(tmp_path / "out").to_pylist()}
    for lang in PROSE:
        assert rows[lang]["language"] == lang
        assert (
            rows[lang]["gopher_stop_words"] >= 4 and rows[lang]["gopher_stop_words_skipped"] == ""
        )
    assert rows["yue"]["language"] == "zh" and rows["yue"]["gopher_stop_words"] >= 6
    assert rows["th"]["language"] == "th" and rows["th"]["gopher_stop_words"] is None
    assert rows["th"]["gopher_stop_words_skipped"] == "no stop-word list for language 'th'"

    # The paper's English words for every document: only English prose has them.
    english = {"gopher_quality": {"language_aware": False}}
    old = run_pipeline(
        {"input": str(raw), "output": str(tmp_path / "old"), "stages": ["langid", english]}
    )
    assert old.stats["excluded_by"]["gopher_quality"]["too_few_stop_words"] == len(PROSE)


def test_a_document_without_language_gets_the_papers_english_words():
    stage = GopherQuality()
    assert stage.stop_words_for(None) == STOP_WORDS["en"]
    assert stage.stop_words_for("de-AT") == STOP_WORDS["de"]
    assert GopherQuality(stop_words=["x", "y"]).stop_words_for("de") == {"x", "y"}
    mine = GopherQuality(stop_words_by_language={"de": ["oder"]})
    assert mine.stop_words_for("de") == {"oder"} and mine.stop_words_for("fr") == STOP_WORDS["fr"]


@pytest.mark.parametrize("code", sorted(STOP_WORDS))
def test_every_stop_word_is_a_token_the_splitter_can_produce(code: str):
    """A stop word the word splitter never cuts out (a trailing period, an apostrophe)
    could never be counted; every list is for a code langid gives."""
    assert code in MODEL_CODES and len(STOP_WORDS[code]) >= 8
    words = sorted(STOP_WORDS[code])
    text = " x ".join(words)
    assert set(words) <= analyze(f"x {text} x", code).word_set


@pytest.mark.parametrize("code", sorted(_LISTS))
def test_lists_are_written_in_nfc_without_repeats(code: str):
    words = _LISTS[code].split()
    assert len(words) == len(set(words))
    assert all(unicodedata.normalize("NFC", word) == word for word in words)


def test_a_stop_word_counts_in_the_spellings_real_text_has():
    """Assamese typed with য় as one code point (as in the system's own catalogs) and
    Malayalam with its chillu letters written the old way count like their NFC forms."""
    assamese = "এই ফাইল নহয় আৰু ই খালী নহয়"
    typed = assamese.replace("\u09af\u09bc", "\u09df")
    assert typed != assamese
    malayalam = "ഇത് ഒരു ഫയൽ അല്ലെങ്കിൽ ഫോൾഡർ ആണ്"
    old = malayalam.replace("ൽ", "\u0d32\u0d4d\u200d")
    for code, text, other in (("as", assamese, typed), ("ml", malayalam, old)):
        stage = GopherQuality(mode="annotate")
        counts = [
            stage.apply(Document("a", t, "s", {"language": code})).metadata["gopher_stop_words"]
            for t in (text, other)
        ]
        assert counts[0] == counts[1] >= 3
