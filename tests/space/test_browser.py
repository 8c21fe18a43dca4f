"""One real headless-browser pass over the Space: open it, upload an image, see the verdict table
and the leaderboard. Screenshots of every tab go to the test's tmp dir.

Every wait is on state (a component's value in the DOM, a result the server sent), with generous
timeouts: the suite runs on a busy 2-core machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_builder.loading import load_prompts
from evaluator.report import leaderboard_row
from evaluator.results import ResultRecord
from space.app import build_app
from space.store import Entry, SQLiteStore
from space.submissions import model_detail
from tests.helpers.net import launch_local
from tests.helpers.space_helpers import RectanglePerception, result_line, scene_png

CHROMIUM = Path("/usr/bin/chromium")
WAIT_MS = 120_000  # for anything the server computes or sends


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_browser_scores_an_upload_and_shows_the_leaderboard(tmp_path):
    assert CHROMIUM.exists(), "install Debian's chromium (`make browser`) to run the browser test"
    from playwright.sync_api import expect, sync_playwright

    prompts = load_prompts(None)
    store = SQLiteStore(tmp_path / "lb.sqlite")
    # One verified model (every other prompt passes) so the leaderboard has a detail view and a plot.
    results = [
        ResultRecord.model_validate(result_line(p, 0, "toy_model", passed=i % 2 == 0)) for i, p in enumerate(prompts)
    ]
    store.add_submission(
        Entry(
            model_name="Toy Model",
            model_key="toy_model",
            submitter="alice",
            status="verified",
            reason="spot check: 8 of 8 re-scored images agree",
            row={**leaderboard_row(results, "toy_model"), "model": "Toy Model"},
            detail=model_detail(results),
        ),
        results,
    )
    demo = build_app(prompts=prompts, store=store, perception=RectanglePerception())
    url = launch_local(demo)
    image = scene_png(tmp_path / "scene.png")
    screens: list[Path] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM),
                args=[
                    "--no-sandbox",
                    "--headless",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                ],
            )
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.set_default_timeout(WAIT_MS)
            page.goto(url, timeout=WAIT_MS)
            expect(page.get_by_text("4800 prompts")).to_be_visible(timeout=WAIT_MS)
            expect(
                page.get_by_role("grid", name="Statements").get_by_text("positive").filter(visible=True).first
            ).to_be_visible(timeout=WAIT_MS)

            def shot(name: str) -> None:
                path = tmp_path / f"{name}.png"
                page.screenshot(path=str(path), full_page=True)
                screens.append(path)

            shot("1_explore")

            page.get_by_role("tab", name="Score an image").click()
            panel = page.get_by_role("tabpanel")
            panel.locator("input[type=file]").first.set_input_files(str(image))
            # The upload shows the picture itself, not a file chip: an image served from the
            # server's copy of the upload (named after the file) once it is stored there.
            uploaded = panel.locator('img[src*="scene.png"]')
            expect(uploaded).to_have_count(1, timeout=WAIT_MS)
            expect(uploaded).to_be_visible()
            page.get_by_label("…or a prompt in the benchmark grammar").fill(
                "a photo of a cat and a dog, where the cat is not left of the dog"
            )
            page.get_by_role("button", name="Score").click()
            expect(page.get_by_text("Image verdict: FAIL")).to_be_visible(timeout=WAIT_MS)
            # The uploaded gradient was scored (a missing upload would be an error, an empty image 0/2).
            expect(page.get_by_text("2/2 objects present, 0/1 statements satisfied")).to_be_visible(timeout=WAIT_MS)
            verdicts = page.get_by_role("grid", name="Objects and statements")
            expect(verdicts.get_by_text("forbidden_rendered").filter(visible=True).first).to_be_visible(timeout=WAIT_MS)
            expect(verdicts.get_by_text("statement 0").filter(visible=True).first).to_be_visible(timeout=WAIT_MS)
            shot("2_score")

            page.get_by_role("tab", name="Leaderboard").click()
            board = page.get_by_role("grid", name="Leaderboard")
            expect(board.get_by_text("SD 1.5 + NegationCLIP").filter(visible=True).first).to_be_visible(timeout=WAIT_MS)
            expect(board.get_by_text("reported (paper)").filter(visible=True).first).to_be_visible(timeout=WAIT_MS)
            expect(board.get_by_text("Toy Model").filter(visible=True).first).to_be_visible(timeout=WAIT_MS)
            expect(
                page.get_by_text("Toy Model: verified (spot check: 8 of 8 re-scored images agree); submitted by alice")
            ).to_be_visible(timeout=WAIT_MS)
            shot("3_leaderboard")

            page.get_by_role("tab", name="Submit").click()
            expect(page.get_by_role("button", name="Submit")).to_be_visible(timeout=WAIT_MS)
            shot("4_submit")
            browser.close()
    finally:
        demo.close()
    assert [p.name for p in screens] == ["1_explore.png", "2_score.png", "3_leaderboard.png", "4_submit.png"]
