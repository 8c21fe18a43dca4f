"""Every page as a visitor sees it, in real Chromium at 1,280 and 1,920 px, in the three states a Space is
in: plain `serve` with an empty store, `serve --demo`, and a store holding one verified entry. The Space
opens on the Leaderboard; no tab draws a component as an empty frame (an empty gallery, table, plot,
image or file box); no table header breaks inside a word; the submissions table's header takes at most two
lines; a failure is said once, whole, beside what failed (no toast repeating it).

Every wait is on state (the page settled: no event running), with generous timeouts: the suite runs on a
busy 2-core machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_builder.loading import load_prompts
from leaderboard.checks.compared_fields import shown_numbers
from leaderboard.store.entries import Entry
from leaderboard.store.sqlite_store import SQLiteStore
from space.app import build_app
from space.demo import DEMO_IMAGES, demo_setup
from space.demo_scenes import SCENES_KEY, shipped_records
from tests.helpers.net import launch_local
from tests.helpers.page_checks import BROWSER_ARGS, CHROMIUM, header_lines, lasting_problems, settle

WAIT_MS = 180_000
WIDTHS = (1280, 1920)
TABS = ("Leaderboard", "Explore", "Score an image", "Gallery", "Compare", "Submit", "Annotate")


def app_in(state: str, folder: Path):
    """The app of one state: an empty store, the demo, or a store with one verified (not synthetic) entry."""
    if state == "demo":
        return build_app(**demo_setup(folder / "demo").app_kwargs())
    prompts = load_prompts(None)
    store = SQLiteStore(folder / "leaderboard.sqlite")
    quiet = {"recheck_every": None, "hub_dataset": ""}
    if state == "empty":
        return build_app(prompts=prompts, store=store, **quiet)
    setup = demo_setup(folder / "scenes")  # its scenes stand in for a model's images here
    records = shipped_records()
    row, detail = shown_numbers(records)
    entry = Entry(
        model_name="One verified model",
        model_key=SCENES_KEY,
        submitter="tester",
        status="verified",
        reason="verified by its spot check",
        row={**row, "model": "One verified model"},
        detail=detail,
        images_repo=DEMO_IMAGES,
        images_revision="main",
        evaluator_version=records[0].evaluator_version,
        config_hash=records[0].config_hash,
    )
    store.add_submission(entry, records)
    return build_app(prompts=prompts, store=store, open_images=setup.open_images, **quiet)


def walk_every_tab(page) -> dict[str, list[str]]:
    """Each tab opened in turn once the page has settled: what it shows empty or broken."""
    found = {}
    for name in TABS:
        page.get_by_role("tab", name=name).click()
        settle(page, WAIT_MS)
        found[name] = lasting_problems(page, WAIT_MS)
    return found


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("state", ["empty", "demo", "one_verified"])
def test_the_space_opens_on_the_ranking_and_no_tab_shows_an_empty_frame(tmp_path, state):
    from playwright.sync_api import expect, sync_playwright

    demo = app_in(state, tmp_path)
    url = launch_local(demo)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
            for width in WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 1000})
                page.set_default_timeout(WAIT_MS)
                page.goto(url, timeout=WAIT_MS)
                expect(page.locator('[role="tab"][aria-selected="true"]')).to_have_text("Leaderboard")
                expect(page.locator("#leaderboard")).to_contain_text("reported (paper)")
                expect(page.locator("#leaderboard-plot img")).to_be_visible()  # the ranking drawn, not a frame
                settle(page, WAIT_MS)
                problems = walk_every_tab(page)
                assert problems == dict.fromkeys(TABS, []), (width, problems)
                if state != "empty":  # the submissions table is listed: its header fits two lines
                    page.get_by_role("tab", name="Submit").click()
                    expect(page.locator("#submissions")).to_be_visible()
                    assert header_lines(page, "#submissions") <= 2, width
                page.close()
            browser.close()
    finally:
        demo.close()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_failure_is_said_once_beside_what_failed(tmp_path):
    """Score without the scorer's weights: the tab's note says which weights and how to get them, once;
    the click's answer points at it in one line; no toast repeats either."""
    from playwright.sync_api import expect, sync_playwright

    demo = app_in("demo", tmp_path)  # its Score tab holds an example picture and prompt to click Score on
    url = launch_local(demo)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(WAIT_MS)
            page.goto(url, timeout=WAIT_MS)
            page.get_by_role("tab", name="Score an image").click()
            expect(page.locator("#score-notice")).to_contain_text("Score cannot run here yet")
            page.get_by_role("button", name="Score", exact=True).click()
            expect(page.locator("#verdict")).to_contain_text("not scored: the scorer's model weights")
            settle(page, WAIT_MS)
            text = page.locator("body").inner_text()
            assert text.count("negt2ibench download-models") == 1  # how to get them: in the note only
            assert text.count("not scored: the scorer's model weights") == 1
            assert page.locator(".toast-body").count() == 0  # no toast repeating it, cut short
            browser.close()
    finally:
        demo.close()
