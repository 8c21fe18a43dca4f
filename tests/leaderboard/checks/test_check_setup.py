"""`leaderboard.checks.check_setup.SubmissionLimits`: the limits a submitter is told (docs/space.md's
*Limits*) are the ones applied, read from the page, not from the module's constants."""

from __future__ import annotations

import re
from pathlib import Path

from leaderboard.checks.check_setup import SubmissionLimits

DOC = (Path(__file__).resolve().parents[3] / "docs" / "space.md").read_text(encoding="utf-8")


def test_the_default_limits_are_the_documented_ones():
    found = re.findall(r"Limits: ([0-9]+) MB per file, ([0-9]+) stored submissions per", DOC)
    assert len(found) == 1, "docs/space.md states its limits once"
    megabytes, per_day = map(int, found[0])
    # MB as the upload widget counts it (`max_file_size="200mb"`, tests/helpers/net.py): 2**20 bytes
    assert SubmissionLimits().max_bytes == megabytes * 2**20
    assert SubmissionLimits().per_day == per_day
    [invalid] = re.findall(r"at most ([0-9]+) files\s+an hour refused as invalid", DOC)
    assert SubmissionLimits().invalid_per_hour == int(invalid)


def test_a_setup_cannot_be_changed_once_made():
    # every check of a run reads the same setup (the secret its samples are drawn with, the limits):
    # a handler that reassigned one would change the samples of the checks after it
    import dataclasses

    import pytest

    from dataset_builder.records import PromptIndex
    from leaderboard.checks.check_setup import SpotCheckSetup

    setup = SpotCheckSetup(PromptIndex([]), None, secret=b"drawn once")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setup.secret = b"another"  # type: ignore[misc]
    assert setup.secret == b"drawn once"
