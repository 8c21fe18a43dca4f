"""Names (leaderboard/text/submitted_names.py): the skeletons of the confusables that come in mutual pairs
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

from leaderboard.store.sqlite_store import Entry, model_key_of, name_conflict
from leaderboard.text.submitted_names import (
    MAX_LINK,
    QUOTE_LIMIT,
    clean,
    clip,
    code_span,
    confusable_key,
    http_link,
    hub_repo_id,
    name_problem,
    plain_markdown,
    revision_name,
    shorten,
    skeleton,
    terminal_text,
)
from tests.helpers.name_cases import DISTINCT, LOOKALIKES, OWNER_NAME, PAPER_LOOKALIKES, PROBE_LOOKALIKES

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


# -- what a model's name may be (`name_problem`), and the sinks' own escapes ------------------------


def refused_as_lookalike(name: str) -> str:
    """Why NAME cannot be taken beside "First Model": its own problem, else the store's look-alike rule."""
    problem = name_problem(name)
    if problem:
        return problem
    return name_conflict([Entry(model_name=OWNER_NAME, model_key="first_model", submitter="owner")], *owned(name))


def owned(name: str) -> tuple[str, str, str]:
    cleaned = clean(name)
    return cleaned, model_key_of(cleaned), "mallory"


@pytest.mark.parametrize("name", LOOKALIKES, ids=[ascii(n) for n in LOOKALIKES])
def test_every_lookalike_of_a_name_is_refused(name):
    assert refused_as_lookalike(name), ascii(name)


def test_the_probes_lookalikes_are_refused_for_their_characters():
    for name in PROBE_LOOKALIKES:
        problem = name_problem(name)
        assert "is not allowed in a model name" in problem or "mixes the Latin and Cyrillic scripts" in problem, name


@pytest.mark.parametrize("name", DISTINCT, ids=[ascii(n) for n in DISTINCT])
def test_every_distinct_name_is_accepted(name):
    assert name_problem(name) == "" and refused_as_lookalike(name) == ""


def test_the_distinct_names_have_distinct_keys():
    assert len(LOOKALIKES) >= 60 and len(DISTINCT) >= 30
    keys = [confusable_key(name) for name in DISTINCT]
    assert len(set(keys)) == len(keys) and confusable_key(OWNER_NAME) not in keys


@pytest.mark.parametrize("name", PAPER_LOOKALIKES)
def test_the_paper_rows_names_are_reserved(name):
    assert "a row of the paper's Table 3" in name_problem(name)


@pytest.mark.parametrize(
    "name, problem",
    [
        ("Name\ufffe", "the model name holds the noncharacter U+FFFE"),
        ("Name\U0010ffff", "the model name holds the noncharacter U+10FFFF"),
        (
            "Na\ud800me",
            "the model name holds a lone surrogate (U+D800), which is not text; type the name as plain text",
        ),
        ("Na\x1b[2Jme", "the model name holds the control character U+001B"),
        ("Na\tme", "the model name holds the control character U+0009"),
        (
            "Model\u202e",
            "the model name holds the bidi control U+202E RIGHT-TO-LEFT OVERRIDE; type the name as plain text",
        ),
        (
            "Mo\u200bdel",
            "the model name holds the invisible character U+200B ZERO WIDTH SPACE; type the name as plain text",
        ),
        ("   ", "enter the model's name"),
        ("x" * 101, "the model name is 101 characters long (at most 100)"),
        ("PixArt-\u03b1", "the model name mixes the Latin and Greek scripts; write it in one script"),
        ("+ ()", "the model name has no letter or digit"),
        ("<b>x</b>", "U+003C LESS-THAN SIGN is not allowed in a model name"),
        ("=HYPERLINK(1)", "U+003D EQUALS SIGN is not allowed in a model name"),
    ],
)
def test_what_no_sink_can_carry_is_refused_in_one_line(name, problem):
    said = name_problem(name)
    assert said.startswith(problem) and "\n" not in said


def test_a_hundred_character_name_is_allowed():
    assert name_problem("A" * 100) == "" and name_problem(" " + "A" * 100 + " ") == ""


@pytest.mark.parametrize(
    "repo, ok",
    [
        ("org/name", True),
        ("Org-1/na.me_2", True),
        ("o/" + "n" * 96, True),
        ("o/" + "n" * 97, False),
        ("o" * 200_002 + "/n", False),
        ("org/na--me", False),
        ("org/na..me", False),
        ("org/name.git", False),
        ("org", False),
        ("org/name/x", False),
        ("../../victim/private-ds", False),
        ("org/n\u00e4me", False),
    ],
)
def test_a_repo_id_follows_the_hubs_rules(repo, ok):
    if ok:
        assert hub_repo_id(repo) == repo
    else:
        with pytest.raises(ValueError, match="is not a Hub repo id ORG/NAME") as raised:
            hub_repo_id(repo)
        assert len(str(raised.value)) < 300


def test_a_code_span_keeps_links_mentions_and_html_as_text():
    assert code_span("[x](https://e.vil) @everyone <img src=x onerror=alert(1)>") == (
        "`[x](https://e.vil) @everyone <img src=x onerror=alert(1)>`"
    )
    assert code_span("a `b` ``c``") == "``` a `b` ``c`` ```"  # a longer fence than any run inside
    assert code_span("x\u202ey\nz") == "`xy z`"


def test_terminal_text_shows_controls_as_escapes():
    assert terminal_text("a\x1b[2Jb\rc\u202ed\ud800e\ufffe") == "a\\x1b[2Jb\\rc\\u202ed\\ud800e\\ufffe"
    assert terminal_text("Ünïcode 模型") == "Ünïcode 模型"
