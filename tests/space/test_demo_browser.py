"""`negt2ibench serve --demo` in a real headless browser (Chromium at 1280 px, the app's own launch
settings): every tab is filled from the shipped synthetic examples, and each synthetic thing says
so on the page itself. The app is the one `serve --demo` builds (`space.demo.demo_setup`); the
command itself is run in tests/space/test_cli.py. Screenshots of every tab go to the test's tmp dir.

Every wait is on state (text or a count in the DOM), with generous timeouts: the suite runs on a
busy 2-core machine."""

from __future__ import annotations

import pytest

from space.app import build_app
from space.demo import PENDING_NAME, VERIFIED_NAME, demo_setup
from tests.helpers.net import launch_local
from tests.helpers.page_checks import BROWSER_ARGS, CHROMIUM

WAIT_MS = 120_000


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_demo_fills_every_tab_and_labels_each_synthetic_thing(tmp_path):
    assert CHROMIUM.exists(), "install Debian's chromium (`make browser`) to run the browser test"
    from playwright.sync_api import expect, sync_playwright

    demo = build_app(**demo_setup(tmp_path / "demo").app_kwargs())
    url = launch_local(demo)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(WAIT_MS)
            page.goto(url, timeout=WAIT_MS)

            def shot(name: str) -> None:
                page.screenshot(path=str(tmp_path / f"demo_{name}.png"), full_page=True)

            def visible(locator):
                return locator.filter(visible=True).first

            note = page.locator("#demo-note")  # on every tab: above them
            expect(note).to_contain_text("nothing here is a model's output", timeout=WAIT_MS)
            expect(note).to_contain_text(f"{VERIFIED_NAME} (shown below the paper's rows, never ranked")
            page.get_by_role("tab", name="Explore").click()
            expect(page.get_by_text("4800 prompts")).to_be_visible(timeout=WAIT_MS)
            shot("explore")

            page.get_by_role("tab", name="Score an image").click()
            # no weights here (the tests' caches are empty): said on page load, with the command to get them
            expect(page.locator("#score-notice")).to_contain_text("Score cannot run here yet.", timeout=WAIT_MS)
            expect(page.locator("#score-notice")).to_contain_text("negt2ibench download-models")
            expect(page.locator("#verdict")).to_contain_text("Synthetic scene, not scored here")
            expect(page.locator("#verdict")).to_contain_text("Image verdict")
            expect(page.get_by_role("tabpanel").locator("img").first).to_be_visible(timeout=WAIT_MS)
            shot("score")

            page.get_by_role("tab", name="Leaderboard").click()
            board = page.get_by_role("grid", name="Leaderboard")
            expect(visible(board.get_by_text(VERIFIED_NAME))).to_be_visible(timeout=WAIT_MS)
            expect(visible(board.get_by_text("reported (paper)"))).to_be_visible()
            expect(visible(board.get_by_text("synthetic demo · not ranked"))).to_be_visible()
            awaiting = page.locator("#leaderboard-awaiting")
            expect(visible(awaiting.get_by_text(PENDING_NAME))).to_be_visible(timeout=WAIT_MS)
            expect(visible(awaiting.get_by_text("demo entry, synthetic", exact=False))).to_be_visible()
            shot("leaderboard")

            page.get_by_role("tab", name="Gallery").click()
            summary = page.locator("#gallery-summary")
            expect(summary).to_contain_text(f"{VERIFIED_NAME} (verified): 192 of 192 images match", timeout=WAIT_MS)
            thumbnails = page.locator("#gallery-thumbnails img")
            expect(thumbnails).to_have_count(24, timeout=WAIT_MS)
            thumbnails.nth(0).click()
            expect(page.locator("#gallery-verdict")).to_contain_text("Image verdict", timeout=WAIT_MS)
            expect(page.locator("#gallery-image img")).to_be_visible(timeout=WAIT_MS)
            shot("gallery")

            page.get_by_role("tab", name="Compare").click()
            compare = page.locator("#compare-summary")
            expect(compare.locator("li")).to_have_text([f"{VERIFIED_NAME} (verified)"], timeout=WAIT_MS)  # in full
            expect(page.locator("#compare-thumbnails img")).to_have_count(4, timeout=WAIT_MS)
            shot("compare")

            page.get_by_role("tab", name="Submit").click()
            expect(page.get_by_role("button", name="Submit", exact=True)).to_be_visible(timeout=WAIT_MS)
            shot("submit")

            page.get_by_role("tab", name="Annotate").click()
            page.get_by_label("Your name").fill("visitor")
            page.locator("#annotate-start").click()
            expect(page.locator("#annotate-header")).to_contain_text("Image 1", timeout=WAIT_MS)
            expect(note).to_contain_text("are the drawings of negt2ibench examples")
            shot("annotate")
            browser.close()
    finally:
        demo.close()
