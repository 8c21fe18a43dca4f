"""UTS #39 data and rules (leaderboard/text/identifiers.py): the shipped IdentifierStatus.txt is Unicode's
17.0.0 file, its Allowed ranges read as the file lists them, and TR39's highly restrictive level.

Expected values are read from the file itself (`leaderboard/data/IdentifierStatus.txt`, Unicode
17.0.0, 2025-08-01): line `0027 ; Allowed # 1.1 APOSTROPHE`, `0030..003A ; Allowed` (digits and the
colon), `00B7 ; Allowed # MIDDLE DOT`; U+200C/U+200D are not listed (Restricted since 15.0)."""

from __future__ import annotations

import hashlib

import pytest

from leaderboard.text.identifiers import (
    IDENTIFIER_STATUS,
    IDENTIFIER_STATUS_SHA256,
    UNICODE_VERSION,
    identifier_allowed,
    mixed_scripts,
    script_extensions,
)


def test_the_shipped_file_is_unicodes_with_its_licence():
    data = IDENTIFIER_STATUS.read_bytes()
    assert hashlib.sha256(data).hexdigest() == IDENTIFIER_STATUS_SHA256
    assert f"# Version: {UNICODE_VERSION}" in data.decode("utf-8")[:600]
    licence = (IDENTIFIER_STATUS.parent / "UNICODE-LICENSE.txt").read_text(encoding="utf-8")
    assert "UNICODE LICENSE V3" in licence and "SPDX-License-Identifier: Unicode-3.0" in licence


@pytest.mark.parametrize(
    "character, allowed",
    [
        ("'", True),
        ("-", True),
        (".", True),
        ("9", True),
        (":", True),
        ("_", True),
        ("\u00b7", True),
        ("a", True),
        ("\u00e9", True),
        ("\u0456", True),  # Cyrillic і is Allowed: the script rule refuses it beside Latin
        ("\u4e00", True),
        (" ", False),
        ("+", False),
        ("|", False),
        ("\u200c", False),
        ("\u200d", False),
        ("\u23d0", False),
        ("\ua781", False),
        ("\uab87", False),
        ("\u115f", False),
        ("\U0010ffff", False),
    ],
)
def test_identifier_status_as_the_file_lists_it(character, allowed):
    assert identifier_allowed(character) is allowed


def test_script_extensions_come_from_unicodes_data():
    assert script_extensions("a") == {"Latn"} and script_extensions("1") == {"Zyyy"}
    assert script_extensions("\u30fc") == {"Hira", "Kana"}  # KATAKANA-HIRAGANA PROLONGED SOUND MARK


@pytest.mark.parametrize(
    "text, problem",
    [
        ("First Model", ""),
        ("\u0420\u0443\u0441\u0441\u043a\u0438\u0439", ""),
        ("\u753b\u50cf\u30e2\u30c7\u30eb v2", ""),  # Latin + Han + Katakana: Japanese
        ("\u4e2d\u6587 \u3105 v1", ""),  # Latin + Han + Bopomofo: Chinese
        ("\ud55c\uad6d\uc5b4 \u6f22 v3", ""),  # Latin + Han + Hangul: Korean
        ("F\u0456rst", "mixes the Latin and Cyrillic scripts"),
        ("\u03b1 model", "mixes the Greek and Latin scripts"),
        ("\ud55c\uad6d\uc5b4 \u30e2\u30c7\u30eb", "mixes the Hangul and Katakana scripts"),
    ],
)
def test_highly_restrictive(text, problem):
    assert mixed_scripts(text) == problem
