"""Names (leaderboard/names.py): the skeletons of the confusables that come in mutual pairs
(`_prototypes`), and the limits of what a message quotes (`clip`, `shorten`, links, Markdown).

confusable-homoglyphs' JSON lists, for each character of a TR39 pair, the other one. Most prototypes
have several sources, so the source (listed once) is told from the prototype; 1,440 pairs are
*mutual*: each character lists only the other (e.g. U+050A CYRILLIC CAPITAL LETTER KOMI NJE and
U+01F6 LATIN CAPITAL LETTER HWAIR: confusables.txt maps U+050A to U+01F6). Both characters of such a
pair must get one skeleton, whichever of the two is the prototype.
"""

from __future__ import annotations

import unicodedata

import pytest

from leaderboard.names import (
    MAX_LINK,
    QUOTE_LIMIT,
    clip,
    confusable_key,
    http_link,
    plain_markdown,
    revision_name,
    shorten,
    skeleton,
)

HWAIR, KOMI_NJE = "\u01f6", "\u050a"
SMALL_CAPITAL_A, CHEROKEE_GO = "\u1d00", "\uab7a"  # another mutual pair, both letters


def mutual_pairs() -> list[tuple[str, str]]:
    """The pairs of single characters whose entries in the package's JSON list only each other."""
    from confusable_homoglyphs.confusables import confusables_data

    listed: dict[str, list[str]] = {}
    for key, entries in confusables_data.items():
        listed.setdefault(key.strip("\u200e\u200f"), []).extend(e["c"].strip("\u200e\u200f") for e in entries)
    return [
        (one, others[0])
        for one, others in listed.items()
        if len(one) == 1 and len(others) == 1 and len(others[0]) == 1 and listed.get(others[0]) == [one]
        if one < others[0]
    ]


@pytest.mark.parametrize("one, other", [(HWAIR, KOMI_NJE), (SMALL_CAPITAL_A, CHEROKEE_GO)])
def test_a_mutual_pair_shares_one_skeleton_and_one_name(one, other):
    assert skeleton(one) == skeleton(other)
    assert skeleton(f"{one}ello") == skeleton(f"{other}ello")
    assert confusable_key(f"{one}ello Model") == confusable_key(f"{other}ello Model")
    assert confusable_key(f"{one}ello Model") != confusable_key("ello Model")  # the letter itself counts


def test_every_mutual_pair_of_undecomposed_characters_shares_a_skeleton():
    """The whole table: of its 1,440 mutual pairs, the 625 that NFD leaves as they are (a pair with a
    precomposed character, Å, Ö, Й ..., is split by the skeleton's first NFD before any mapping, as
    TR39's skeleton splits it)."""
    pairs = mutual_pairs()
    assert len(pairs) == 1440
    stable = [(a, b) for a, b in pairs if unicodedata.normalize("NFD", a + b) == a + b]
    assert len(stable) == 625
    apart = [f"U+{ord(a):04X}/U+{ord(b):04X}" for a, b in stable if skeleton(a) != skeleton(b)]
    assert apart == [], f"{len(apart)} mutual pairs get two skeletons, e.g. {apart[:5]}"


def test_clip_keeps_the_limit_and_says_the_length_beyond_it():
    assert clip("x" * QUOTE_LIMIT) == "x" * QUOTE_LIMIT  # at the limit: whole
    assert clip("x" * (QUOTE_LIMIT + 1)) == "x" * QUOTE_LIMIT + "… (201 characters)"
    assert clip("abcdef", 3) == "abc… (6 characters)" and clip(12345, 5) == "12345"


def test_shorten_keeps_the_last_clause_whole():
    assert shorten("x" * 600) == "x" * 600  # at the limit: whole
    long = "y" * 700 + "; nothing was stored"
    cut = shorten(long)
    assert cut.endswith("…; nothing was stored") and len(cut) == 600 and cut.startswith("y" * 500)
    assert shorten("a" * 50 + "; " + "b" * 30, 60) == "a" * 27 + "…; " + "b" * 30  # the last clause: 30 <= 60 // 2
    # no clause, or a last clause over half the limit: cut like `clip`
    assert shorten("z" * 700) == clip("z" * 700, 600)
    assert shorten("a" * 50 + "; " + "b" * 31, 60) == clip("a" * 50 + "; " + "b" * 31, 60)


def test_plain_markdown_drops_invisible_characters_and_joins_lines():
    assert plain_markdown("a\u200bb\u202ec\n\nd") == "abc d"
    assert plain_markdown("**x** & <y>") == "\\*\\*x\\*\\* &amp; &lt;y&gt;"


def test_a_link_is_at_most_max_link_characters():
    base = "https://example.org/"
    assert http_link(base + "a" * (MAX_LINK - len(base))) == base + "a" * (MAX_LINK - len(base))
    with pytest.raises(ValueError, match=f"501 characters long \\(at most {MAX_LINK}\\)"):
        http_link(base + "a" * (MAX_LINK + 1 - len(base)))


def test_a_revision_is_a_plain_name_without_a_parent_step():
    assert revision_name(" v1.0/rc ") == "v1.0/rc" and revision_name("") == "main"
    for bad in ("v1..2", "../main", "-x", "a b", "x" * 101):
        with pytest.raises(ValueError, match="is not a branch, tag or commit name"):
            revision_name(bad)
