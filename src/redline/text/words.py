"""What a word is, the same way for every script: one counting rule for every word measure.

`max-words`, `distinct-n` and the golden-output choice all count with `words()`:

- text written with spaces (English, Indonesian, Vietnamese, Korean...) splits on
  whitespace, so a Vietnamese syllable or "Rp180.000," is one word, as before;
- each character of a script written without spaces is a word on its own: Han
  (Chinese, Japanese kanji), hiragana, katakana, and the letters of Thai, Lao,
  Khmer and Myanmar (a letter with its vowel and tone marks is one word);
- CJK and Thai punctuation (。，、「」！？ ฯ …) separate like a space and is not a word.

This is the documented equivalent of "Unicode word boundaries with each CJK/Thai
character as a word": no dictionary segmenter, so a 500-character Chinese answer
is about 500 words (a Chinese word averages 1.5 characters, so budgets written for
English words are roughly right) and a Chinese phrase looped forty times has
forty copies of the same character n-grams. `COUNTING_RULE` names this rule in
every result so a change of it is never mistaken for a changed threshold.
"""

from __future__ import annotations

import re

#: Named in results and baselines: bump when the rule changes.
COUNTING_RULE = "words/v2: whitespace, each CJK/Thai character a word"

_UNSPACED = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3005\u3007"  # 々 〇
    "\u3040-\u30ff"  # hiragana, katakana
    "\u31f0-\u31ff"  # katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # halfwidth katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
#: Vowel signs, tone marks and other combining marks that belong to the letter before them.
_MARKS = (
    "\u0e31\u0e34-\u0e3a\u0e47-\u0e4e"  # Thai
    "\u0eb1\u0eb4-\u0ebc\u0ec8-\u0ecd"  # Lao
    "\u102b-\u103e\u1056-\u1059\u105e-\u1060\u1062-\u1064\u1067-\u106d\u1071-\u1074"
    "\u1082-\u108d\u108f\u109a-\u109d"  # Myanmar
    "\u17b4-\u17d3\u17dd"  # Khmer
    "\u3099\u309a"  # kana voicing marks
)
_PUNCTUATION = (
    "\u0e2f\u0e5a\u0e5b"  # Thai ฯ ๚ ๛
    "\u3000-\u3004\u3008-\u303f"  # CJK symbols and punctuation, ideographic space
    "\u30fb"  # katakana middle dot
    "\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"  # fullwidth punctuation
)
_SPECIAL = re.compile(f"[{_UNSPACED}{_PUNCTUATION}]")
_LETTER = re.compile(f"[{_UNSPACED}][{_MARKS}]*")
_SEPARATOR = re.compile(f"[{_PUNCTUATION}]")


def words(text: str) -> list[str]:
    """The words of `text` by the counting rule above, in order."""
    if text.isascii() or _SPECIAL.search(text) is None:
        return text.split()
    return _LETTER.sub(r" \g<0> ", _SEPARATOR.sub(" ", text)).split()


def word_count(text: str) -> int:
    return len(words(text))
