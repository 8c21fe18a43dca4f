"""The Annotate tab in a real headless browser: an annotator answers three images with the
keyboard, goes back to check one, the server restarts (a new app on the same store), and the
annotator resumes on the fourth image; `negt2ibench annotations export` then gives exactly the
answers given. Screenshots go to the test's tmp dir (and, with NEGT2I_DOC_IMAGES set by `make
screenshots`, the first to docs/img/space_annotate.png)."""

from __future__ import annotations

import pytest

from leaderboard.store.sqlite_store import SQLiteStore
from negt2ibench.cli import main
from tests.helpers.annotate_helpers import answer_pattern, expected_record
from tests.helpers.doc_pictures import doc_images_dir, small_png
from tests.helpers.layouts import record_layouts
from tests.helpers.net import launch_local
from tests.helpers.page_checks import BROWSER_ARGS, CHROMIUM
from tests.helpers.screenshot_apps import ANNOTATE_PROMPT_IDS, annotate_app, annotate_sample
from validation.annotations import read_annotations
from validation.questions import prompt_questions


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_annotator_answers_three_restarts_and_resumes_on_the_fourth(tmp_path):
    assert CHROMIUM.exists(), "install Debian's chromium (`make browser`) to run the browser test"
    from playwright.sync_api import expect, sync_playwright

    prompts, sample_file = annotate_sample(tmp_path)
    by_id = {prompt.prompt_id: prompt for prompt in prompts}
    home = tmp_path / "home"
    home.mkdir()

    def serve():
        demo = annotate_app(SQLiteStore(home / "leaderboard.sqlite"), sample_file)
        return demo, launch_local(demo)

    given: dict[str, list[str]] = {}
    demo, url = serve()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1100})

            def sign_in() -> None:
                page.get_by_role("tab", name="Annotate").click()
                page.get_by_label("Your name").fill("alice")
                page.locator("#annotate-start").click()

            def radio(slot: int, value: str):
                return page.locator(f"#annotate-q-{slot} input[type=radio][value={value}]")

            page.goto(url)
            sign_in()
            header = page.locator("#annotate-header")
            for k, prompt in enumerate(prompts[:3]):
                expect(header).to_contain_text(f"Image {k + 1}", timeout=60_000)
                expect(header).to_contain_text(prompt.prompt)
                answers = answer_pattern(prompt, k)
                for slot, question in enumerate(prompt_questions(prompt)):  # the page has settled
                    expect(page.locator(f"#annotate-q-{slot}")).to_contain_text(f"{slot + 1}. {question.text}")
                for slot, value in enumerate(answers):
                    page.keyboard.press(value[0])  # "y" / "n": the first unanswered question
                    expect(radio(slot, value)).to_be_checked()
                page.screenshot(path=str(tmp_path / f"annotate_{k + 1}.png"), full_page=True)
                if k == 0 and doc_images_dir() is not None:  # `make screenshots`: the manual's picture of the tab
                    small_png(tmp_path / "annotate_1.png", doc_images_dir() / "space_annotate.png")
                    record_layouts(demo, ["space_annotate.png"])
                page.keyboard.press("Enter")
                given[prompt.prompt_id] = answers
            expect(header).to_contain_text("Image 4", timeout=30_000)
            expect(page.locator("#annotate-progress")).to_contain_text("alice · 3 done · 2 left for you")

            page.keyboard.press("ArrowLeft")  # back to the third image, the answers filled in
            expect(header).to_contain_text("Image 3", timeout=30_000)
            for slot, value in enumerate(given[prompts[2].prompt_id]):
                expect(radio(slot, value)).to_be_checked()
            page.keyboard.press("ArrowRight")
            expect(header).to_contain_text("Image 4", timeout=30_000)
            expect(radio(0, "yes")).not_to_be_checked()

            demo.close()  # the server restarts: a new app, the same store
            demo, url = serve()
            page.goto(url)
            sign_in()
            expect(header).to_contain_text("Image 4", timeout=60_000)
            expect(header).to_contain_text(prompts[3].prompt)
            expect(page.locator("#annotate-progress")).to_contain_text("alice · 3 done · 2 left for you")
            page.screenshot(path=str(tmp_path / "annotate_resumed.png"), full_page=True)
            browser.close()
    finally:
        demo.close()

    out = tmp_path / "annotations.jsonl"
    assert main(["annotations", "export", "--out", str(out), "--home", str(home)]) == 0
    records = read_annotations(out)
    assert [(r.prompt_id, r.model_key, r.sample_index, r.annotator) for r in records] == [
        (p, "toy_model", 0, "alice") for p in sorted(ANNOTATE_PROMPT_IDS[:3])
    ]
    for record in records:
        expected = expected_record(by_id[record.prompt_id], given[record.prompt_id])
        assert (record.objects, record.statements) == expected
