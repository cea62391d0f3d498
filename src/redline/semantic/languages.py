"""Which language a reply or a concept is written in, cheaply: by script, by Vietnamese
letters, and by the function words of the Latin-script languages.

A mentions threshold depends on the (concept language, reply language) pair, so the
scorer needs the reply's language for every output: this costs a regular-expression
pass, no model. Short concepts ("pengembalian dana") carry no function words, so for
them a small support-domain vocabulary and Indonesian affixes guess between English
and Indonesian; the scorer settles such a guess on the embeddings (the language whose
concepts' mean direction is closest), which the vocabulary cannot cover ("kursi anak").
Anything without evidence is `None` (undetermined).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

#: Language names as people read them in a reason.
NAMES = {
    "en": "English",
    "zh": "Chinese",
    "id": "Indonesian",
    "vi": "Vietnamese",
    "ja": "Japanese",
    "ko": "Korean",
    "th": "Thai",
    "ru": "Russian",
    "ar": "Arabic",
    "hi": "Hindi",
    "he": "Hebrew",
    "el": "Greek",
    "es": "Spanish",
    "fr": "French",
    "de": "German",
    "pt": "Portuguese",
    "it": "Italian",
    "nl": "Dutch",
}

_SCRIPTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ja", re.compile(r"[\u3040-\u30ff]")),
    ("ko", re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")),
    ("zh", re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")),
    ("th", re.compile(r"[\u0e00-\u0e7f]")),
    ("ru", re.compile(r"[\u0400-\u04ff]")),
    ("ar", re.compile(r"[\u0600-\u06ff]")),
    ("hi", re.compile(r"[\u0900-\u097f]")),
    ("he", re.compile(r"[\u0590-\u05ff]")),
    ("el", re.compile(r"[\u0370-\u03ff]")),
)
#: Letters only Vietnamese uses among the Latin-script languages detected here.
_VIETNAMESE = re.compile(r"[ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ]", re.IGNORECASE)
_LATIN_WORD = re.compile(r"[^\W\d_]+")

_FUNCTION_WORDS = {
    "en": "the a an and or of to in on for with is are was were be been it this that you your "
    "we our us they their he she his her will would can could not no do does did have has had "
    "from at by as if so but there here what which who when how please thank thanks sorry "
    "i my me am",
    "id": "yang dan di ke dari untuk dengan ini itu tidak bisa akan sudah belum kami kita anda "
    "saya kamu mereka ada adalah atau juga pada dalam karena jika kalau agar supaya harus "
    "dapat telah sedang masih hanya lebih sangat mohon silakan terima kasih maaf bapak ibu "
    "nya lagi saat oleh para bagi tersebut hari dia ia lalu semua setiap sepanjang selama kemarin "
    "besok nanti sini sana begitu",
    "es": "el la los las de del y o en un una es son por para con que no su sus lo le se muy "
    "gracias usted ustedes pero como está están",
    "fr": "le la les de des du et ou en un une est sont pour avec que qui ne pas vous nous votre "
    "vos merci mais dans sur au aux ce cette",
    "de": "der die das den dem des und oder in ein eine ist sind für mit nicht sie wir ihr ihre "
    "danke aber auf zu im von dass",
    "pt": "o a os as de do da dos das e ou em um uma é são por para com que não seu sua você "
    "obrigado obrigada mas no na",
    "it": "il lo la i gli le di del della e o in un una è sono per con che non suo sua grazie "
    "ma nel nella",
    "nl": "de het een en of in is zijn voor met dat niet u uw wij we jullie bedankt maar op van",
}
_WORDS = {lang: frozenset(words.split()) for lang, words in _FUNCTION_WORDS.items()}

#: Content words of support replies, for concepts too short to carry function words.
_CONTENT_WORDS = {
    "id": (
        "dana uang pengembalian pesanan pengiriman kiriman paket barang harga akun kata sandi "
        "langganan garansi diskon potongan maaf alamat stok habis poin tukar penukaran "
        "pembayaran bayar tagihan biaya ongkos kirim terlambat keterlambatan batal pembatalan "
        "ganti rugi keluhan pelanggan nomor telepon surel faktur struk kartu kredit debit "
        "rekening transfer pinjaman bunga denda cicilan promo hadiah ukuran warna rusak cacat "
        "perbaikan servis jadwal janji temu pemasangan toko jam buka tutup libur layanan "
        "bantuan retur kembali kembalikan atur ulang masuk keluar daftar hapus ubah lupa aktif "
        "nonaktif blokir saldo tiket penerbangan hotel kamar sewa"
    ),
    "en": (
        "refund money back order delivery shipping parcel package item price account password "
        "subscription warranty discount sorry apology address stock points exchange payment "
        "bill fee late delay cancel cancellation complaint customer phone email invoice "
        "receipt card credit debit bank transfer loan interest fine instalment promo gift "
        "size colour color broken damaged repair service appointment installation store "
        "opening hours holiday help support return reset login sign balance ticket flight "
        "hotel room rent tracking number confirmation tax charge out"
    ),
}
_CONCEPT_WORDS = {lang: frozenset(words.split()) for lang, words in _CONTENT_WORDS.items()}
#: Indonesian derivations: pe(ng)-…-an, ke-…-an, me(ng)-/ber-/ter-…-kan.
_INDONESIAN_AFFIX = re.compile(
    r"^(?:pe[nmr]?g?\w{3,}an|ke\w{3,}an|me[nm]?g?\w{3,}kan|ber\w{3,}|ter\w{3,}kan)$"
)


def name(lang: str | None) -> str:
    """`Indonesian (id)`; `an undetermined language` for None."""
    if lang is None:
        return "an undetermined language"
    return f"{NAMES.get(lang, lang)} ({lang})"


def detect(text: str) -> str | None:
    """The language a reply is mostly written in, or None when nothing shows it."""
    script = _script(text)
    if script is not None:
        return script
    words = [w.casefold() for w in _LATIN_WORD.findall(text)]
    if not words:
        return None
    if sum(1 for w in words if _VIETNAMESE.search(w)) >= max(1, len(words) // 5):
        return "vi"
    counts = Counter({lang: sum(1 for w in words if w in vocab) for lang, vocab in _WORDS.items()})
    ranked = counts.most_common(2)
    if ranked[0][1] == 0 or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return _by_content(words)
    return ranked[0][0]


#: Latin-script languages told apart only by their words (no letters of their own): a short
#: concept in one of them may carry no word that shows which.
WORDS_ONLY = frozenset({"en", "id", "es", "fr", "de", "pt", "it", "nl"})


def shown(concept: str) -> bool:
    """Whether the concept's script, letters or function words show its language (else
    `detect_concept` guessed it from a small vocabulary, or took English)."""
    return detect(concept) is not None


@lru_cache(maxsize=1024)
def detect_concept(concept: str) -> str | None:
    """The language of a concept: as for replies, then, for a few words without function
    words, by support vocabulary and Indonesian affixes (English when neither says)."""
    found = detect(concept)
    if found is not None:
        return found
    words = [w.casefold() for w in _LATIN_WORD.findall(concept)]
    return ("en" if words else None) if _by_content(words) is None else _by_content(words)


def _script(text: str) -> str | None:
    """A non-Latin script that outweighs the Latin words (product names inside a Chinese
    reply do not make it English); kana decides Japanese over the Han characters it uses."""
    latin = len(_LATIN_WORD.findall(text))
    best: tuple[int, str] | None = None
    for lang, pattern in _SCRIPTS:
        count = len(pattern.findall(text))
        if lang == "ja" and count:
            return "ja"
        if count and (best is None or count > best[0]):
            best = (count, lang)
    if best is None:
        return None
    count, lang = best
    # A Han or Thai character is about a word; alphabetic scripts spell words of letters.
    weight = count if lang in ("zh", "ko", "th") else count / 5
    return lang if weight >= latin else None


def _by_content(words: list[str]) -> str | None:
    indonesian = sum(1 for w in words if w in _CONCEPT_WORDS["id"] or _INDONESIAN_AFFIX.match(w))
    english = sum(1 for w in words if w in _CONCEPT_WORDS["en"])
    if indonesian > english:
        return "id"
    if english > indonesian:
        return "en"
    return None
