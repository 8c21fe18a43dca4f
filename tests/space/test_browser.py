"""One real headless-browser pass over the Space, at 1280 px and launched with the app's own launch
settings (`launch_local`: `space.app.LAUNCH_KWARGS`): open it, upload an image, see the verdict
table, submit a results file and see it awaiting verification on the leaderboard without a reload,
whose first visible columns are the ranking's, then a verified model's gallery and one prompt
compared across models. Screenshots of every tab go to the test's tmp dir, and with NEGT2I_DOC_IMAGES
set (`make screenshots`) to the manual's pictures, docs/img/space_*.png.

The models are made up and say so: "Toy model (hand-written records)" has records written by
`result_line` and no images; "Synthetic scenes (rectangle double)" has synthetic scenes scored by
the real rules on the rectangle double's detections (`tests.helpers.synthetic_scenes`).

Every wait is on state (a component's value in the DOM, a result the server sent), with generous
timeouts: the suite runs on a busy 2-core machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_builder.loading import load_prompts
from evaluator.report import leaderboard_row
from evaluator.results import ResultRecord
from leaderboard.checks.compared_fields import shown_numbers
from leaderboard.intake.submissions import ImagesUnreachable, ParquetImages
from leaderboard.store.sqlite_store import Entry, SQLiteStore
from tests.helpers.doc_pictures import doc_images_dir, small_png
from tests.helpers.gallery_helpers import some_prompts
from tests.helpers.layouts import record_layouts
from tests.helpers.net import launch_local
from tests.helpers.page_checks import BROWSER_ARGS, CHROMIUM
from tests.helpers.screenshot_apps import screenshot_app
from tests.helpers.space_helpers import result_line, scene_png, write_results
from tests.helpers.synthetic_scenes import SYNTHETIC_KEY, SYNTHETIC_MODEL, scored_scenes, write_scene_repo

WAIT_MS = 120_000  # for anything the server computes or sends
TOY = "Toy model (hand-written records)"
SUBMITTED = "Submitted toy model (offline images)"
SCENES_REPO = "demo/synthetic-scenes"
WIDTH = 1280  # the narrow desktop the leaderboard's headline columns must fit
HEADLINE = ["rank", "model", "overall", "overall_ci", "polarity_gap"]
# The header cells of a table whose right edge is inside the window: what is seen without scrolling.
VISIBLE_HEADERS_JS = """(id) => [...document.querySelectorAll(`#${id} thead th`)]
  .filter((th) => th.getBoundingClientRect().width > 0 && th.getBoundingClientRect().right <= window.innerWidth)
  .map((th) => th.innerText.trim())"""


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_browser_scores_an_upload_and_shows_the_leaderboard_gallery_and_compare(tmp_path):
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
            model_name=TOY,
            model_key="toy_model",
            submitter="alice",
            status="verified",
            reason="spot check: 8 of 8 re-scored images agree",
            row={**leaderboard_row(results, "toy_model"), "model": TOY},
            detail=shown_numbers(results).detail,
        ),
        results,
    )
    # A second verified model with images: synthetic scenes of 48 prompts, scored by the real rules.
    scored = scored_scenes(some_prompts(prompts, per_setting=1))
    scenes = [record for record, _ in scored]
    repo = write_scene_repo(tmp_path / "scenes", scored, SYNTHETIC_KEY)
    store.add_submission(
        Entry(
            model_name=SYNTHETIC_MODEL,
            model_key=SYNTHETIC_KEY,
            submitter="bob",
            status="verified",
            reason="synthetic: scored here, by the rules, on the test double's detections",
            images_repo=SCENES_REPO,
            images_revision="main",
            row={**leaderboard_row(scenes, SYNTHETIC_KEY), "model": SYNTHETIC_MODEL},
            detail=shown_numbers(scenes).detail,
        ),
        scenes,
    )

    def open_images(repo_id: str, revision: str, split: str):
        if repo_id != SCENES_REPO:
            raise ImagesUnreachable(f"images not reachable: {repo_id} (offline test)")
        return ParquetImages.from_folder(repo, split)

    demo = screenshot_app(tmp_path, store, open_images)
    (tmp_path / "no-hub").mkdir()  # a Hub without the submitted repo
    url = launch_local(demo)
    image = scene_png(tmp_path / "scene.png")
    submitted = write_results(tmp_path / "submitted.jsonl", prompts, "submitted_toy", passed=False)
    screens: list[Path] = []
    docs = doc_images_dir()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
            page = browser.new_page(viewport={"width": WIDTH, "height": 1100})
            page.set_default_timeout(WAIT_MS)
            page.goto(url, timeout=WAIT_MS)
            expect(page.locator('[role="tab"][aria-selected="true"]')).to_have_text("Leaderboard")  # opens on it
            page.get_by_role("tab", name="Explore").click()
            expect(page.get_by_text("4800 prompts")).to_be_visible(timeout=WAIT_MS)
            expect(
                page.get_by_role("grid", name="Statements").get_by_text("positive").filter(visible=True).first
            ).to_be_visible(timeout=WAIT_MS)

            def shot(name: str) -> None:
                path = tmp_path / f"{name}.png"
                page.screenshot(path=str(path), full_page=True)
                screens.append(path)
                if docs is not None:
                    small_png(path, docs / f"space_{name.split('_', 1)[1]}.png")

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

            page.get_by_role("tab", name="Submit").click()
            panel = page.get_by_role("tabpanel")
            expect(page.get_by_role("button", name="Submit", exact=True)).to_be_visible(timeout=WAIT_MS)
            panel.locator("input[type=file]").first.set_input_files(str(submitted))
            expect(panel.get_by_text("submitted.jsonl").first).to_be_visible(timeout=WAIT_MS)
            page.get_by_label("Model name").fill(SUBMITTED)
            page.get_by_label("Images dataset (Hub repo id; split = your results' model key)").fill("org/offline")
            page.get_by_role("button", name="Submit", exact=True).click()
            expect(page.get_by_text("status validated: stored and its file checked")).to_be_visible(timeout=WAIT_MS)
            shot("7_submit")

            # No reload: the awaiting list was read again after the submission, and is on the timer.
            page.get_by_role("tab", name="Leaderboard").click()
            awaiting = page.locator("#leaderboard-awaiting")
            expect(awaiting.get_by_text(SUBMITTED).filter(visible=True).first).to_be_visible(timeout=WAIT_MS)
            # its spot check cannot reach the images: pending, as the timer's next reading shows
            expect(awaiting.get_by_text("spot check waits").filter(visible=True).first).to_be_visible(timeout=WAIT_MS)
            board = page.get_by_role("grid", name="Leaderboard")
            expect(board.get_by_text("SD 1.5 + NegationCLIP").filter(visible=True).first).to_be_visible(timeout=WAIT_MS)
            expect(board.get_by_text("reported (paper)").filter(visible=True).first).to_be_visible(timeout=WAIT_MS)
            expect(board.get_by_text(TOY).filter(visible=True).first).to_be_visible(timeout=WAIT_MS)
            visible = page.evaluate(VISIBLE_HEADERS_JS, "leaderboard")
            assert visible[: len(HEADLINE)] == HEADLINE and "status" in visible, visible  # at 1280 px, unscrolled
            expect(page.locator("#leaderboard-ranking")).to_contain_text("only verified submissions are ranked")
            expect(page.locator("#leaderboard-plot")).to_be_visible()  # the ranking as a plot
            page.get_by_label("A model's detail: choose a model").click()
            page.get_by_role("option", name=TOY, exact=True).click()
            expect(
                page.get_by_text(f"{TOY}: verified (spot check: 8 of 8 re-scored images agree); submitted by alice")
            ).to_be_visible(timeout=WAIT_MS)
            # the detail's figures beside its tables, and their data as CSV
            expect(page.get_by_role("cell", name="toy_model_accuracy_by_setting.csv")).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_label(".eval_results YAML (verified entries)")).to_be_hidden()  # no Hub: no empty box
            shot("3_leaderboard")

            page.get_by_role("tab", name="Gallery").click()
            picker = page.get_by_label("Verified model")
            expect(page.locator("#gallery-summary")).to_contain_text("verified", timeout=WAIT_MS)  # opened: filled
            picker.click()
            page.get_by_role("option", name=SYNTHETIC_MODEL).click()
            summary = page.locator("#gallery-summary")
            expect(summary).to_contain_text(f"{SYNTHETIC_MODEL} (verified): 192 of 192 images match", timeout=WAIT_MS)
            thumbnails = page.locator("#gallery-thumbnails img")
            expect(thumbnails).to_have_count(24, timeout=WAIT_MS)
            expect(thumbnails.first).to_be_visible()
            thumbnails.nth(1).click()  # color_pos1_neg0_000 #1: its only object missing
            verdict = page.locator("#gallery-verdict")
            expect(verdict).to_contain_text("Image verdict: FAIL", timeout=WAIT_MS)
            expect(page.locator("#gallery-image img")).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_text("subject_missing").filter(visible=True).first).to_be_visible(timeout=WAIT_MS)
            shot("5_gallery")

            page.get_by_role("tab", name="Compare").click()
            expect(page.locator("#compare-summary")).to_contain_text("2 verified models", timeout=WAIT_MS)
            expect(page.locator("#compare-prompt")).to_contain_text("color_pos1_neg0_000", timeout=WAIT_MS)
            # one click to the same content negated: the group's 0:1 prompt
            page.get_by_label("0:1 color_pos0_neg1_000").check()
            expect(page.locator("#compare-prompt")).to_contain_text("color_pos0_neg1_000", timeout=WAIT_MS)
            compared = page.locator("#compare-thumbnails img")
            # one row per model: the toy model's one sample (no images repo) and 3 it lacks, then 4 scenes
            expect(compared).to_have_count(8, timeout=WAIT_MS)
            expect(compared.first).to_be_visible()
            shot("6_compare")
            browser.close()
    finally:
        demo.close()
    if docs is not None:  # the layouts just photographed: tests/space/test_screenshots_current.py holds them
        record_layouts(demo, [f"space_{p.stem.split('_', 1)[1]}.png" for p in screens])
    assert [p.name for p in screens] == [
        "1_explore.png",
        "2_score.png",
        "7_submit.png",
        "3_leaderboard.png",
        "5_gallery.png",
        "6_compare.png",
    ]
