"""Skeletons of the confusables that come in mutual pairs (leaderboard/names.py `_prototypes`).

confusable-homoglyphs' JSON lists, for each character of a TR39 pair, the other one. Most prototypes
have several sources, so the source (listed once) is told from the prototype; 1,440 pairs are
*mutual*: each character lists only the other (e.g. U+050A CYRILLIC CAPITAL LETTER KOMI NJE and
U+01F6 LATIN CAPITAL LETTER HWAIR: confusables.txt maps U+050A to U+01F6). Both characters of such a
pair must get one skeleton, whichever of the two is the prototype.
"""

from __future__ import annotations

import unicodedata

import pytest

from leaderboard.names import confusable_key, skeleton

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
