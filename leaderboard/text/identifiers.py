"""UTS #39 for names a reader must tell apart: the identifier profile and the restriction level.

- `identifier_allowed(character)`: Identifier_Status=Allowed, read from Unicode's own
  `IdentifierStatus.txt` (UTS #39, version `UNICODE_VERSION`), shipped in `leaderboard/data/` with
  its licence and checked against `IDENTIFIER_STATUS_SHA256`. Python's `unicodedata` has no such
  property, nor has `regex`; the libraries that have it (PyICU, icupy) need ICU built on the machine.
  Every code point the file does not list is Restricted (its `@missing` line).
- `script_extensions(character)`: the character's Script_Extensions, from fontTools' copy of
  Unicode's `ScriptExtensions.txt` (`fontTools.unicodedata`, a dependency of matplotlib).
- `mixed_scripts(text)`: why TEXT is not "highly restrictive" in TR39's sense (section 5.2), "" when
  it is: all of it in one script (the resolved script set of section 5.1 is not empty: Common and
  Inherited characters go with any script, and Han, Hiragana, Katakana, Bopomofo and Hangul count
  as the writing systems they belong to), or all of it covered by Latin + Han + Hiragana + Katakana,
  Latin + Han + Bopomofo or Latin + Han + Hangul. Latin with Greek or Cyrillic is refused: those
  scripts share the letters that look alike (а, о, і, Α, Μ).
"""

from __future__ import annotations

import bisect
import hashlib
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"  # leaderboard/data/, beside the sub-packages
IDENTIFIER_STATUS = DATA / "IdentifierStatus.txt"
UNICODE_VERSION = "17.0.0"
IDENTIFIER_STATUS_SHA256 = "617228a16da13850bf8af28b6cd08f5e9b6595d2eb60404fe6eee2c85b4e4a35"

COMMON, INHERITED = "Zyyy", "Zinh"
# TR39 5.1: the scripts a character of a CJK script also stands for (its augmented script set).
_AUGMENTED = {
    "Hani": {"Hanb", "Jpan", "Kore"},
    "Hira": {"Jpan"},
    "Kana": {"Jpan"},
    "Hang": {"Kore"},
    "Bopo": {"Hanb"},
}
# TR39 5.2, Highly Restrictive: the script combinations allowed beside single-script text.
HIGHLY_RESTRICTIVE = (
    frozenset({"Latn", "Hani", "Hira", "Kana"}),
    frozenset({"Latn", "Hani", "Bopo"}),
    frozenset({"Latn", "Hani", "Hang"}),
)


class IdentifierDataError(RuntimeError):
    """The shipped IdentifierStatus.txt is not the file this module was written for."""


@lru_cache(maxsize=1)
def _allowed_ranges() -> tuple[list[int], list[int]]:
    """The Allowed ranges of IdentifierStatus.txt, as sorted starts and their ends."""
    data = IDENTIFIER_STATUS.read_bytes()
    if hashlib.sha256(data).hexdigest() != IDENTIFIER_STATUS_SHA256:
        raise IdentifierDataError(f"{IDENTIFIER_STATUS} is not Unicode {UNICODE_VERSION}'s IdentifierStatus.txt")
    starts, ends = [], []
    for line in data.decode("utf-8").splitlines():
        content = line.split("#", 1)[0].strip()
        if not content:
            continue
        points, status = (field.strip() for field in content.split(";"))
        if status != "Allowed":
            continue
        first, _, last = points.partition("..")
        starts.append(int(first, 16))
        ends.append(int(last or first, 16))
    order = sorted(range(len(starts)), key=starts.__getitem__)
    return [starts[i] for i in order], [ends[i] for i in order]


def identifier_allowed(character: str) -> bool:
    """Whether the character's Identifier_Status is Allowed (UTS #39)."""
    starts, ends = _allowed_ranges()
    point = ord(character)
    position = bisect.bisect_right(starts, point) - 1
    return position >= 0 and point <= ends[position]


def script_extensions(character: str) -> frozenset[str]:
    """The character's Script_Extensions (ISO 15924 codes; Zyyy Common, Zinh Inherited)."""
    from fontTools import unicodedata as ucd

    return frozenset(ucd.script_extension(character))


def _augmented(scripts: frozenset[str]) -> set[str]:
    found = set(scripts)
    for script in scripts:
        found |= _AUGMENTED.get(script, set())
    return found


def script_name(code: str) -> str:
    """ "Latn" → "Latin" (fontTools' name of the script), else the code."""
    from fontTools import unicodedata as ucd

    return str(ucd.script_name(code, default=code)).replace("_", " ")


def mixed_scripts(text: str) -> str:
    """Why TEXT is not highly restrictive (TR39 5.2), naming the scripts it mixes; "" when it is."""
    sets = [script_extensions(c) for c in text]
    specific = [s for s in sets if not s & {COMMON, INHERITED}]
    if not specific:
        return ""
    resolved = _augmented(specific[0])
    for scripts in specific[1:]:
        resolved &= _augmented(scripts)
    if resolved:
        return ""  # one script (or one writing system: Japanese, Chinese, Korean)
    if any(all(scripts & combination for scripts in specific) for combination in HIGHLY_RESTRICTIVE):
        return ""
    seen: dict[str, None] = {}
    for scripts in specific:
        seen.setdefault(min(scripts), None)
    names = [script_name(code) for code in seen]
    return f"mixes the {', '.join(names[:-1])} and {names[-1]} scripts"
