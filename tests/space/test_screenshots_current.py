"""The manual's pictures of the Space are of the Space as it is: each tab's layout (its components, in order:
`tests.helpers.layouts`) is the one recorded when its picture was taken (`make screenshots` writes both).
A change of a tab's layout fails here, naming the picture to take again."""

from __future__ import annotations

import json

import pytest

from leaderboard.store.image_sources import ImagesUnreachable
from leaderboard.store.sqlite_store import SQLiteStore
from tests.helpers.layouts import LAYOUTS_FILE, PICTURE_TABS, stale_pictures, tab_layouts
from tests.helpers.screenshot_apps import annotate_app, annotate_sample, screenshot_app

RETAKE = "the layout of its tab changed since it was taken: run `make screenshots` (and commit docs/img)"


def no_images(repo_id: str, revision: str, split: str):
    raise ImagesUnreachable("images not reachable (a layout needs none)")


@pytest.mark.slow
def test_each_picture_shows_its_tab_as_the_app_lays_it_out_now(tmp_path):
    browser_app = screenshot_app(tmp_path, SQLiteStore(tmp_path / "lb.sqlite"), no_images)
    _, sample_file = annotate_sample(tmp_path)
    annotating = annotate_app(SQLiteStore(tmp_path / "annotate.sqlite"), sample_file)
    try:
        stale = [p for p in stale_pictures(browser_app) if p != "space_annotate.png"]
        stale += [p for p in stale_pictures(annotating) if p == "space_annotate.png"]
    finally:
        browser_app.close()
        annotating.close()
    assert not stale, "\n".join(f"docs/img/{picture}: {RETAKE}" for picture in stale)


def test_a_changed_tab_names_its_picture(tmp_path):
    import gradio as gr

    with gr.Blocks() as app, gr.Tabs():
        for picture, tab in PICTURE_TABS.items():
            with gr.Tab(picture, id=tab):
                gr.Markdown("text")
    recorded = tmp_path / "layouts.json"
    recorded.write_text(json.dumps(dict.fromkeys(PICTURE_TABS, ["markdown:"])))
    assert stale_pictures(app, recorded) == []
    with gr.Blocks() as changed, gr.Tabs():
        for picture, tab in PICTURE_TABS.items():
            with gr.Tab(picture, id=tab):
                gr.Markdown("text")
                if tab == "gallery":
                    gr.Button("a new button")
    assert stale_pictures(changed, recorded) == ["space_gallery.png"]
    assert tab_layouts(changed)["gallery"] == ["markdown:", "button:"]
    assert LAYOUTS_FILE.name == "space_layouts.json"
