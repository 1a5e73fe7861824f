"""Japanese (a small share of the corpus): no spaces, polite sentence endings, 。、"""

from __future__ import annotations

from mixplane.synth.lexicon import Language, entries

NOUNS = entries("""
    都市, 川, 村, 言語, 歴史, 政府, 地域, 市場, 博物館, 図書館, 学校, 大学, 会社, 国, 島, 山,
    森, 橋, 鉄道, 駅, 港, 寺, 城, 祭り, 伝統, 経済, 産業, 人口, 研究, 方法, 構造, 気候, 庭園,
    工場, 車両, 計算機, 番組, 映画, 小説, 作家, 選手, 試合, 法律, 病院, 学生, 先生, 新聞,
    雑誌, 建物, 空港, 船, 製品, 運河, 神社
""")
ADJECTIVES = entries("""
    重要な, 古い, 新しい, 有名な, 伝統的な, 大きな, 小さな, 美しい, 現代的な, 地元の, 主要な,
    静かな, 便利な, 特別な, 自然な, 歴史的な, 人気のある, 独特な
""")
VERBS = entries("""
    支えています, 含んでいます, 提供しています, 結んでいます, 守っています, 管理しています,
    紹介しています, 育てています, 変えています, 広げています, 調べています, 示しています
""")
PAST = entries("""
    建てられました, 設立されました, 開かれました, 発表されました, 作られました, 完成しました,
    始まりました, 再建されました, 整備されました, 発見されました
""")
ADVERBS = entries("また, よく, のちに, 今も, 主に, 徐々に, 急速に, 最近, 当初, 現在, 特に")
PLACES = entries("""
    東京, 大阪, 京都, 名古屋, 札幌, 福岡, 神戸, 横浜, 仙台, 広島, 奈良, 金沢, 那覇, 長崎, 熊本
""")
FIRST_NAMES = entries("太郎, 花子, 健一, 美咲, 翔太, 陽子, 大輔, 由美, 拓也, 真理子")
LAST_NAMES = entries("佐藤, 鈴木, 高橋, 田中, 伊藤, 渡辺, 山本, 中村, 小林, 加藤")
SENTENCES = (
    "{P}の{N}は{A}{N}を{V}。",
    "{Y}年、{P}に{A}{N}が{VD}。",
    "{PER}によると、この{N}は{D}{N}を{V}。",
    "{N}は{N}と{N}の間にあり、{P}で最も{A}{N}の一つです。",
    "現在、毎年{NUM}人以上がこの{N}を訪れています。",
    "この{N}は{A}{N}で知られています。",
    "{Y}年以降、{N}は{D}{P}の{N}を{V}。",
    "{N}と{N}はどちらも{A}{N}です。",
    "多くの人が{N}は{N}を{V}と考えていますが、議論もあります。",
    "{P}の住民の多くは{N}や{N}で働いています。",
    "{N}の{N}は{Y}年に{VD}。",
    "この{N}には{A}{N}があり、{D}多くの人が訪れます。",
)
CHAT = (
    "私の{N}も同じ問題があります。",
    "{P}の{A}{N}を試した人はいますか？",
    "{FIRST}さん、ありがとうございます！解決しました。",
    "{N}は{D}いいと思いますが、{N}のほうが好きです。",
    "まず{N}を更新してください。",
    "{N}の写真を見せてもらえますか？",
)
TITLES = ("{P}の{N}", "{A}{N}", "{N}の歴史", "{PER}")
LEADS = ("{TITLE}は{P}にある{A}{N}です。", "{TITLE}は{P}の{A}{N}として知られています。")
HEADINGS = entries("歴史, 地理, 経済, 文化, 名称, 概要, 特徴, 評価")
UI = {
    "home": "ホーム",
    "about": "会社概要",
    "contact": "お問い合わせ",
    "privacy": "プライバシーポリシー",
    "terms": "利用規約",
    "cookie": "当サイトでは、より良い体験を提供するためにCookieを使用しています。"
    "閲覧を続けることで、Cookieの使用に同意したものとみなされます。",
    "accept": "同意する",
    "rights": "無断転載を禁じます。",
    "read_more": "続きを読む",
    "by": "著者",
    "related": "関連記事",
    "search": "検索",
    "news": "ニュース",
    "blog": "ブログ",
    "login": "ログイン",
    "share": "シェア",
    "newsletter": "ニュースレターを購読する",
    "not_found": "ページが見つかりません",
    "back": "トップページに戻る",
}

LANGUAGE = Language(
    code="ja",
    spaced=False,
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
)
