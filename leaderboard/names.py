"""Names that are only names: normalised, compared on their look, and shown as plain text.

Model names, links, revisions and annotator names come from strangers. Here:

- `clean(text)`: NFKC, control and format characters removed (zero-width spaces and joiners,
  bidi overrides and isolates, the BOM, soft hyphens), runs of white space as one space.
- `name_key(text)`: `clean` and case-folded: "alice", "Alice" and "alice" + U+200B are one name.
- `skeleton(text)`: the Unicode TR39 skeleton (NFD, each confusable character replaced by its
  prototype, NFD again), so "Fіrst" with a Cyrillic і and "First" get the same one.
  The confusables are Unicode's confusables.txt as the `confusable-homoglyphs` package ships it
  (its JSON holds each pair in both directions; `_prototypes` recovers source → prototype).
- `confusable_key(text)`: what names that look alike share, for uniqueness checks ("one name,
  one model"): the skeleton, case-folded, marks removed, Latin letters in small capitals or with
  a stroke, hook or other addition as their base letter (TR39 leaves many: ʀ, ᴅ, ø), the vertical
  strokes i, l, 1, I and | as one, and only letters and digits kept: "First Model", "FirstModel",
  "first_model", "FIRST MODEL", "First Modeӏ", "Fiʀst Model" and "F1rst Mode|" are one name.
- `plain_markdown(text)`: text that Markdown shows as it is (every ASCII punctuation escaped,
  `&`, `<`, `>` as entities, so no link, emphasis, code span, autolink or HTML survives).
- `csv_cell(value)`: a cell a spreadsheet will not run as a formula.
- `http_link(text)`, `revision_name(text)`, `clip(text)`: checks of a link and a revision, and
  the most of a stranger's text a message may quote; `shorten(message)`: a message cut to a
  length that keeps its last clause ("...; nothing was stored").
"""

from __future__ import annotations

import re
import string
import unicodedata
from functools import lru_cache
from urllib.parse import urlsplit

QUOTE_LIMIT = 200  # characters of a stranger's text a message may quote
MAX_NAME = 100  # characters of a model or annotator name
MAX_LINK = 500
_SPACES = re.compile(r"\s+")
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
# The generator of confusable-homoglyphs' JSON kept the direction marks of its comments around RTL letters.
_DIRECTION_MARKS = "\u200e\u200f"
_MARKDOWN_SPECIAL = {c: "\\" + c for c in string.punctuation if c not in "&<>"}
_MARKDOWN_SPECIAL.update({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _invisible(character: str) -> bool:
    """Control (Cc) and format (Cf: zero-width, bidi controls, BOM, soft hyphen) characters."""
    return unicodedata.category(character) in ("Cc", "Cf") and character not in "\t\n\r "


def clean(text: str) -> str:
    """NFKC, invisible characters removed, white space collapsed to single spaces, stripped."""
    normal = unicodedata.normalize("NFKC", text or "")
    visible = "".join(" " if c in "\t\n\r" else c for c in normal if not _invisible(c))
    return _SPACES.sub(" ", visible).strip()


def name_key(text: str) -> str:
    """The identity of a typed name: `clean`, then case-folded."""
    return clean(text).casefold()


@lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    """confusable character → its prototype (TR39's confusables.txt, as confusable-homoglyphs ships it).

    The package's JSON lists, for every character of a pair, the other one, so a source (which
    appears once in confusables.txt, mapped to its prototype) has exactly one entry. A pair whose
    two characters each list only the other (a prototype with a single source) cannot be told
    apart: both map to the smaller one, which keeps skeletons equal exactly when TR39's are."""
    from confusable_homoglyphs.confusables import confusables_data

    def unmarked(text: str) -> str:
        return "".join(c for c in text if c not in _DIRECTION_MARKS)

    pairs: dict[str, list[str]] = {}
    for key, entries in confusables_data.items():
        pairs.setdefault(unmarked(key), []).extend(unmarked(entry["c"]) for entry in entries)
    mapping = {}
    for key, others in pairs.items():
        if len(key) != 1 or len(others) != 1 or not others[0]:
            continue
        other = others[0]
        mutual = len(other) == 1 and pairs.get(other) == [key]
        mapping[key] = min(key, other) if mutual else other
    return mapping


def skeleton(text: str) -> str:
    """The TR39 skeleton of `text`: NFD, confusables replaced by their prototypes, NFD (to a fixed point)."""
    mapping = _prototypes()
    current = unicodedata.normalize("NFD", text)
    for _ in range(4):  # prototypes are skeletons already; the paired representatives may need one more pass
        mapped = unicodedata.normalize("NFD", "".join(mapping.get(c, c) for c in current))
        if mapped == current:
            break
        current = mapped
    return current


# A Latin letter with an addition or in another form: its Unicode name says which letter it is drawn as.
_LATIN_LETTER = re.compile(
    r"(?:LATIN|MODIFIER) (?:SMALL |CAPITAL )?(?:LETTER|CAPITAL LETTER) "
    r"(?:SMALL CAPITAL |CAPITAL |SMALL |DOTLESS )?([A-Z])(?: WITH .+)?"
)
# Vertical strokes: TR39 draws I, 1 and | as l, but keeps i (and maps ı, і, ӏ, ɩ, ι to it).
_STROKES = str.maketrans({"i": "l", "1": "l", "|": "l"})


@lru_cache(maxsize=4096)
def _base_letter(character: str) -> str:
    """ʀ (small capital R), ø (o with stroke), ɾ (r with fishhook) ... → r, o, r; anything else as it is."""
    if character.isascii():
        return character
    match = _LATIN_LETTER.fullmatch(unicodedata.name(character, ""))
    return match.group(1).lower() if match else character


def _look(text: str) -> str:
    """One pass of `confusable_key`'s folding (before the non-alphanumerics go)."""
    folded = unicodedata.normalize("NFD", skeleton(text).casefold())
    unmarked = "".join(c for c in folded if unicodedata.category(c) not in ("Mn", "Me"))
    return "".join(_base_letter(c) for c in unmarked).translate(_STROKES)


def confusable_key(text: str) -> str:
    """What two names that look alike share, whatever their case, spaces and punctuation: the
    cleaned name folded (`_look`) until it stays the same ("M" in lower case is "rn" once more),
    then only its letters and digits."""
    current = clean(text)
    for _ in range(6):
        folded = _look(current)
        if folded == current:
            break
        current = folded
    return "".join(c for c in current if c.isalnum())


def plain_markdown(text: object) -> str:
    """`text` as Markdown that renders it literally (on one line, without invisible characters)."""
    visible = "".join(c for c in str(text) if not _invisible(c))
    return "".join(_MARKDOWN_SPECIAL.get(c, c) for c in _SPACES.sub(" ", visible))


def csv_cell(value: object) -> object:
    """A string a spreadsheet would read as a formula gets a leading apostrophe; anything else is kept."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def clip(text: object, limit: int = QUOTE_LIMIT) -> str:
    """At most `limit` characters of `text`, with "…" and the full length when cut."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def shorten(message: str, limit: int = 600) -> str:
    """At most about `limit` characters of a message: when cut, its start and, whole, its last
    clause (after the last "; "), which says what became of the request; "…" marks the cut."""
    if len(message) <= limit:
        return message
    start, separator, last = message.rpartition("; ")
    if not separator or len(last) > limit // 2:
        return clip(message, limit)
    return f"{start[: limit - len(last) - 3]}…; {last}"


def http_link(text: str) -> str:
    """A cleaned http(s) link, or "" for none; anything else raises ValueError."""
    link = clean(text)
    if not link:
        return ""
    if len(link) > MAX_LINK:
        raise ValueError(f"the link is {len(link):,} characters long (at most {MAX_LINK})")
    parts = urlsplit(link)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc or " " in link:
        raise ValueError(f"the link must be an http(s) address, got {clip(link, 80)!r}")
    return link


def revision_name(text: str) -> str:
    """A branch, tag or commit of a Hub repo (default "main"); anything else raises ValueError."""
    revision = clean(text) or "main"
    if not _REVISION.fullmatch(revision) or ".." in revision:
        raise ValueError(f"{clip(revision, 80)!r} is not a branch, tag or commit name")
    return revision
