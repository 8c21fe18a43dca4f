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
  the most of a stranger's text a message may quote; `typed_entry_id(text)`, `quoted_entry_id(text)`:
  an entry id as typed, cut to `MAX_ENTRY_ID`, to look up and to quote in a terminal;
  `shorten(message)`: a message cut to a length that keeps its last clause ("...; nothing was stored").
- `name_problem(text)`: why TEXT cannot be a model's name, whatever the store holds ("" when it
  can): what no sink can carry (surrogates, noncharacters, controls, bidi and other invisible
  characters), then, on its NFKC form, every character Identifier_Status=Allowed (UTS #39,
  `leaderboard.text.identifiers`) or a space or one of `NAME_PUNCTUATION`, one script (TR39's highly
  restrictive level), and not the name of one of the paper's rows nor a look-alike of one.
  Look-alikes of other entries' names are the store's check (`leaderboard.store.entries.name_conflict`).
- `hub_repo_id(text)`: a Hub repo id ORG/NAME by the Hub's own rules (huggingface_hub's
  `validate_repo_id`: 1 to 96 characters each, letters, digits, `-`, `_`, `.`, no `--` or `..`).
- `code_span(text)`, `terminal_text(text)`: a stranger's text as a Markdown code span (a pull
  request's description: no link, mention or HTML survives) and as one line a terminal prints as
  it is (every control, bidi and invisible character written as its escape).
"""

from __future__ import annotations

import re
import string
import unicodedata
from functools import lru_cache
from urllib.parse import urlsplit

from leaderboard.text.identifiers import identifier_allowed, mixed_scripts
from leaderboard.text.paper_rows import PAPER_ROWS

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
# Besides the characters UTS #39 allows in identifiers (letters, digits, marks, and ' - . : · _):
NAME_PUNCTUATION = " +()[]/&,"
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
MAX_REPO_ID = 96 * 2 + 1  # the Hub's limit on each of ORG and NAME, and the slash
# An entry id is 32 hex digits: anything longer typed (the app's entry box or address, a command's
# --entry) is cut to this before it is looked up or quoted.
MAX_ENTRY_ID = 64


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


def typed_entry_id(text: object) -> str:
    """An entry id as typed, to look up: stripped, lower case, at most `MAX_ENTRY_ID` characters."""
    return str(text or "").strip().lower()[:MAX_ENTRY_ID]


def quoted_entry_id(text: object) -> str:
    """An entry id as typed, for a terminal's message: at most `MAX_ENTRY_ID` characters ("…" and the
    full length when cut) on one line, escape sequences and other controls written as their escapes."""
    return terminal_text(clip(text, MAX_ENTRY_ID))


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


def _noncharacter(point: int) -> bool:
    return 0xFDD0 <= point <= 0xFDEF or (point & 0xFFFE) == 0xFFFE


def _unit(character: str) -> str:
    """ "U+202E RIGHT-TO-LEFT OVERRIDE": a character named, for a message."""
    name = unicodedata.name(character, "")
    return f"U+{ord(character):04X}" + (f" {name}" if name else "")


def unsafe_character(text: str) -> str:
    """The first character of TEXT that YAML, CSV, Markdown, HTML or a terminal cannot carry as
    text, described ("" when there is none): a lone surrogate, a noncharacter, a control, a bidi
    control, or another invisible (format) character."""
    for character in text:
        point = ord(character)
        if 0xD800 <= point <= 0xDFFF:
            return f"a lone surrogate (U+{point:04X}), which is not text"
        if _noncharacter(point):
            return f"the noncharacter U+{point:04X}"
        if character in _BIDI_CONTROLS:
            return f"the bidi control {_unit(character)}"
        category = unicodedata.category(character)
        if category == "Cc":
            return f"the control character U+{point:04X}"
        if category == "Cf":
            return f"the invisible character {_unit(character)}"
    return ""


@lru_cache(maxsize=1)
def _reserved() -> dict[str, str]:
    """The look-alike key of each paper row's name → the name."""
    return {confusable_key(row["model"]): row["model"] for row in PAPER_ROWS}


def name_problem(text: str) -> str:
    """Why TEXT cannot be a model's name ("" when it can); see the module's docstring."""
    typed = (text or "").strip()
    unsafe = unsafe_character(typed)
    if unsafe:
        return f"the model name holds {unsafe}; type the name as plain text"
    name = clean(typed)
    if not name:
        return "enter the model's name"
    if len(name) > MAX_NAME:
        return f"the model name is {len(name):,} characters long (at most {MAX_NAME})"
    for character in typed:
        normal = unicodedata.normalize("NFKC", character)
        if any(c not in NAME_PUNCTUATION and not identifier_allowed(c) for c in normal):
            return (
                f"{_unit(character)} is not allowed in a model name: letters, digits and marks of one "
                f"script, spaces and {' '.join(NAME_PUNCTUATION.strip())} ' - . : _ only (UTS #39)"
            )
    mixed = mixed_scripts(name)
    if mixed:
        return f"the model name {mixed}; write it in one script"
    if not any(c.isalnum() for c in name):
        return "the model name has no letter or digit"
    paper = _reserved().get(confusable_key(name))
    if paper is not None:
        return f"{clip(name, 80)!r} is (or looks like) {paper!r}, a row of the paper's Table 3; choose another name"
    return ""


def hub_repo_id(text: str) -> str:
    """TEXT as a Hub repo id ORG/NAME by the Hub's own rules; ValueError (one line) otherwise."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    repo = (text or "").strip()
    shown = clip(repo, 80)
    if len(repo) > MAX_REPO_ID or repo.count("/") != 1:
        raise ValueError(f"{shown!r} is not a Hub repo id ORG/NAME")
    try:
        validate_repo_id(repo)
    except HFValidationError:
        raise ValueError(
            f"{shown!r} is not a Hub repo id ORG/NAME (letters, digits, - _ . only, at most 96 each, no -- or ..)"
        ) from None
    return repo


def code_span(text: object) -> str:
    """TEXT as one Markdown code span: shown as typed, with no link, mention, emphasis or HTML
    (a fence longer than any run of backticks in it); invisible characters removed, one line."""
    visible = "".join(c for c in str(text) if not unsafe_character(c) or c in "\t\n\r")
    line = _SPACES.sub(" ", visible).strip()
    longest = max((len(run) for run in re.findall("`+", line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if line.startswith("`") or line.endswith("`") or not line else ""
    return f"{fence}{pad}{line}{pad}{fence}"


def terminal_text(text: object) -> str:
    """TEXT as one line a terminal shows as it is: controls (escape sequences, bells, carriage
    returns), bidi and other invisible characters, surrogates and noncharacters as their escapes."""
    return "".join(
        character.encode("unicode_escape").decode("ascii") if unsafe_character(character) else character
        for character in str(text)
    )
