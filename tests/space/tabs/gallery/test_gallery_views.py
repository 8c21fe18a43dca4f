"""The Gallery tab's pure views: filters, the rows that match them, and pages."""

from __future__ import annotations

import math

import pytest

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from space.tabs.gallery import gallery_views
from space.verified_images import verified_views
from tests.helpers.gallery_helpers import some_prompts, varied_results


@pytest.fixture(scope="module")
def corpus():
    prompts = load_prompts(None)
    return PromptIndex(prompts), some_prompts(prompts, per_setting=1)


def test_filters_keep_exactly_the_matching_rows(corpus):
    index, prompts = corpus
    rows = [verified_views.gallery_row(r) for r in varied_results(prompts, "m")]
    depth = gallery_views.matching_rows(rows, index, gallery_views.GalleryFilter(category="depth", verdict="fail"))
    assert depth and {index[r.prompt_id].category for r in depth} == {"depth"}
    assert {r.verdict for r in depth} == {"fail"}
    # 1:0, 2:0 and 2:1 prompts have positive relations that fail as dead zones in sample 1
    dead = gallery_views.matching_rows(rows, index, gallery_views.GalleryFilter(cause="dead_zone", load=2))
    assert {index[r.prompt_id].setting for r in dead} == {"pos2_neg0", "pos1_neg1"}
    assert all("dead_zone" in r.causes and r.sample_index == 1 for r in dead)
    unknown = verified_views.GalleryRow("nope_pos1_neg0_000", 0, "pass", ())
    assert (
        gallery_views.matching_rows([unknown, *rows], index, gallery_views.GalleryFilter()) == rows
    )  # an unknown prompt is left out


@pytest.mark.parametrize(
    "wanted, problem",
    [
        (gallery_views.GalleryFilter(), ""),
        (gallery_views.GalleryFilter(category="colour"), "unknown category 'colour'"),
        (gallery_views.GalleryFilter(cause="<b>x</b>"), "unknown cause '<b>x</b>'"),
        (gallery_views.GalleryFilter(load=5), "unknown load '5'"),
        (gallery_views.GalleryFilter(load=2, verdict="fail", setting="pos0_neg2"), ""),
    ],
)
def test_filter_values_are_checked(wanted, problem):
    assert wanted.problem().startswith(problem) if problem else wanted.problem() == ""


@pytest.mark.parametrize(
    "number, expected",
    [(1, 1), (2, 2), (3, 3), (4, 3), (0, 1), (-5, 1), (None, 1), (math.nan, 1), (math.inf, 1), ("2", 2), ("x", 1)],
)
def test_pages_are_clamped(number, expected):
    rows = [verified_views.GalleryRow(f"p{i}", 0, "pass", ()) for i in range(50)]  # 24 + 24 + 2
    page = gallery_views.page_of(rows, number)
    assert (page.number, page.pages, page.total) == (expected, 3, 50)
    assert len(page.rows) == (2 if expected == 3 else 24) and page.first == (expected - 1) * 24 + 1
    assert gallery_views.page_of([], 7) == gallery_views.Page(1, 1, 0, ())
