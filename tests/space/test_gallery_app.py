"""The Gallery and Compare tabs through gradio_client against a localhost launch: the filters,
the pages, an unreachable images repo, thumbnails made once, and which models Compare shows.

The store holds two verified models (one whose images repo is offline), one pending and one
rejected; their records (`tests.helpers.gallery_helpers.varied_record`) have every verdict and
cause, so what each filter must return is known from the records themselves."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.report import leaderboard_row
from evaluator.results import CAUSES, record_verdict
from leaderboard.store.sqlite_store import SQLiteStore
from space.app import build_app
from space.resources import CacheBudget
from space.tabs.gallery import gallery_views
from space.verdict_views import verdict_frame, verdict_summary
from space.verified_images import verified_views
from tests.helpers.gallery_helpers import CountingImages, add_entry, images_repo, some_prompts, varied_results
from tests.helpers.gradio_values import shown
from tests.helpers.net import launch_local, local_client
from tests.helpers.space_helpers import RectanglePerception

ANY = gallery_views.ANY
REPO = "org/gallery-images"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("gallery")
    prompts = load_prompts(None)
    shown = some_prompts(prompts)  # 96 prompts × 4 samples = 384 records per model
    store = SQLiteStore(root / "lb.sqlite")
    records = {
        "Model A": varied_results(shown, "model_a"),
        "Model B": varied_results(shown, "model_b"),
        "Waiting": varied_results(shown, "waiting"),
        "Refused": varied_results(shown, "refused"),
    }
    add_entry(store, "Model A", records["Model A"], created_at=1)
    add_entry(store, "Model B", records["Model B"], images_repo="org/offline", submitter="bob", created_at=2)
    add_entry(store, "Waiting", records["Waiting"], status="pending", submitter="carol", created_at=3)
    add_entry(store, "Refused", records["Refused"], status="rejected", submitter="dave", created_at=4)
    images = CountingImages({REPO: images_repo(root / "repo", shown, "model_a")})
    demo = build_app(
        prompts=prompts, store=store, perception=RectanglePerception(), open_images=images, recheck_every=None
    )
    # Files stay on the server (the same machine): no download of every thumbnail of every page.
    client = local_client(launch_local(demo), verbose=False, download_files=False)
    yield {"client": client, "images": images, "records": records, "index": PromptIndex(prompts), "demo": demo}
    client.close()
    demo.close()


def plain(markdown: str) -> str:
    """Markdown with every escaped punctuation mark as the character it shows."""
    return re.sub(r"\\(.)", r"\1", markdown)


def served(file) -> str:
    """The server's path of a file output (the client does not download it)."""
    return file["path"] if isinstance(file, dict) else file.path


def files_of(output) -> list:
    """A file box's files, as the client gives them (an update when the box is shown only with files)."""
    return shown(output) or []


def table(value) -> pd.DataFrame:
    return pd.DataFrame(value["data"], columns=value["headers"])


def gallery(world, model="Model A", category=ANY, setting=ANY, load=ANY, verdict=ANY, cause=ANY, page=1):
    summary, thumbnails, rows, number, *_ = world["client"].predict(
        model, category, setting, load, verdict, cause, page, api_name="/gallery"
    )
    return summary, thumbnails, table(rows), number


def expected_keys(world, model, keep) -> list[tuple[str, int]]:
    """The keys of the model's records that `keep(prompt, record)` accepts, in corpus order."""
    index = world["index"]
    return [(r.prompt_id, r.sample_index) for r in world["records"][model] if keep(index[r.prompt_id], r)]


def keys_of(frame: pd.DataFrame) -> list[tuple[str, int]]:
    return list(zip(frame["prompt_id"], frame["sample"].astype(int), strict=True))


def all_pages(world, **filters) -> list[tuple[str, int]]:
    summary, _, frame, _ = gallery(world, **filters, page=1)
    pages = int(re.search(r"page 1 of (\d+)", summary).group(1))
    keys = keys_of(frame)
    for number in range(2, pages + 1):
        keys += keys_of(gallery(world, **filters, page=number)[2])
    return keys


@pytest.mark.slow
def test_cause_filter_returns_only_images_with_that_cause(world):
    want = expected_keys(world, "Model A", lambda p, r: any(s.cause == "forbidden_rendered" for s in r.statements))
    assert 24 < len(want) < 384  # more than one page, fewer than all
    assert all_pages(world, cause="forbidden_rendered") == want
    _, thumbnails, frame, _ = gallery(world, cause="forbidden_rendered")
    assert all("forbidden_rendered" in causes for causes in frame["causes"])
    assert len(thumbnails) == len(frame) == 24
    assert all(t["caption"].startswith("FAIL: ") and "forbidden_rendered" in t["caption"] for t in thumbnails)


@pytest.mark.slow
def test_setting_and_other_filters_return_only_matching_images(world):
    want = expected_keys(world, "Model A", lambda p, r: p.setting == "pos0_neg1")
    assert all_pages(world, setting="pos0_neg1") == want and len(want) == 6 * 2 * 4
    _, _, frame, _ = gallery(world, setting="pos0_neg1")
    assert set(frame["setting"]) == {"0:1"}
    want = expected_keys(
        world, "Model A", lambda p, r: p.category == "depth" and p.load == 2 and r.error is None and not r.passed
    )
    assert all_pages(world, category="depth", load="2", verdict="fail") == want and want
    errors = all_pages(world, verdict="error")
    assert errors == expected_keys(world, "Model A", lambda p, r: r.error is not None) and errors
    summary, thumbnails, frame, _ = gallery(world, category="color", cause="dead_zone")  # attributes have none
    assert thumbnails == [] and frame.empty and "0 of 384 images match" in summary


@pytest.mark.slow
def test_gallery_paginates(world):
    summary, thumbnails, frame, number = gallery(world)
    assert "384 of 384 images match; page 1 of 16, images 1–24" in summary and number == 1
    assert len(thumbnails) == 24 and list(frame["#"]) == list(range(1, 25))
    every = all_pages(world)
    assert every == expected_keys(world, "Model A", lambda p, r: True)  # each image once, in corpus order
    summary, _, frame, number = gallery(world, page=2)
    assert list(frame["#"]) == list(range(25, 49)) and "images 25–48" in summary
    # a page past the last shows the last; the last holds the remainder
    summary, thumbnails, frame, number = gallery(world, cause="forbidden_rendered", page=999)
    total = len(
        expected_keys(world, "Model A", lambda p, r: any(s.cause == "forbidden_rendered" for s in r.statements))
    )
    assert number == -(-total // 24) and len(thumbnails) == total - 24 * (number - 1)
    assert gallery(world, page=0)[3] == 1


def test_an_unreachable_images_repo_gives_placeholders_not_a_failed_page(world):
    summary, thumbnails, frame, _ = gallery(world, model="Model B")
    assert "24 of these images could not be fetched" in summary
    assert len(thumbnails) == 24 and set(frame["image"]) == {"images not reachable: org/offline (offline test)"}
    assert all("image unavailable: images not reachable: org/offline" in t["caption"] for t in thumbnails)
    assert all(
        Image.open(served(t["image"])).size == (verified_views.THUMB_SIDE, verified_views.THUMB_SIDE)
        for t in thumbnails[:2]
    )
    # the full view still has the verdict and the table, and says why the image is missing
    image, verdict, rows = world["client"].predict("Model B", "color_pos0_neg1_000", 1, api_name="/gallery_item")
    assert "Image verdict: <span class='verdict-fail'>FAIL</span>" in verdict
    assert "**Image unavailable:** images not reachable" in verdict and image is not None
    assert table(rows)["cause"].tolist()[-1] == "forbidden_rendered"


def test_thumbnails_are_made_once_a_second_load_fetches_nothing(world):
    images = world["images"]
    filters = {"category": "material", "setting": "pos1_neg1"}  # 2 prompts × 4 samples
    # The Space's cache bound sweeps the app's folder (here: all of it), as when it is full:
    # the page's images are then fetched again, in one read, and the page does not fail.
    CacheBudget(0, list, world["demo"].work_dir.existing).enforce()
    images.reset()
    _, first, frame, _ = gallery(world, **filters)
    assert len(first) == 8 and set(frame["image"]) == {verified_views.SHOWN}
    assert images.opened <= 1 and sorted(images.fetched) == sorted(keys_of(frame))  # one read of the page
    images.reset()
    _, second, _, _ = gallery(world, **filters)
    assert images.opened == 0 and images.fetched == []
    assert [t["caption"] for t in second] == [t["caption"] for t in first]
    # the full view of a thumbnail's image reuses the fetched image too
    world["client"].predict("Model A", "material_pos1_neg1_000", 0, api_name="/gallery_item")
    assert images.fetched == []


def test_the_full_view_is_the_score_tabs_view(world):
    index = world["index"]
    record = next(r for r in world["records"]["Model A"] if (r.prompt_id, r.sample_index) == ("depth_pos1_neg0_001", 1))
    image, verdict, rows = world["client"].predict("Model A", "depth_pos1_neg0_001", 1, api_name="/gallery_item")
    assert verdict.startswith(verdict_summary(index[record.prompt_id], record))
    expected = verdict_frame(index[record.prompt_id], record)
    assert table(rows).astype(str).values.tolist() == expected.astype(str).values.tolist()
    drawn = Image.open(served(image)).convert("RGB")
    x0, y0, _, _ = (int(v) for v in record.objects[0].box)
    assert drawn.size == (96, 64) and drawn.getpixel((x0, y0 + 10)) != (200, 180, 160)  # the box's edge is drawn


@pytest.mark.parametrize(
    "model, cause, message",
    [
        ("Nobody", ANY, "no verified entry named 'Nobody'"),
        ("Waiting", ANY, "no verified entry named 'Waiting'"),  # a pending entry is not shown
        ("Refused", ANY, "no verified entry named 'Refused'"),
    ],
)
def test_only_verified_entries_have_a_gallery(world, model, cause, message):
    summary, thumbnails, frame, _ = gallery(world, model=model, cause=cause)
    assert summary.startswith("**Error:**") and message in plain(summary)
    assert thumbnails == [] and frame.empty


def test_compare_shows_every_verified_model_and_no_pending_one(world):
    header, group, summary, thumbnails, rows, *_ = world["client"].predict(
        "directional_pos1_neg1_001", api_name="/compare"
    )
    frame = table(rows)
    assert "directional_pos1_neg1_001" in header and summary.startswith("2 verified models")
    assert set(frame["model"]) == {"Model A", "Model B"}  # not "Waiting" (pending) nor "Refused"
    assert frame.groupby("model").size().to_dict() == {"Model A": 4, "Model B": 4}
    record = {r.sample_index: r for r in world["records"]["Model A"] if r.prompt_id == "directional_pos1_neg1_001"}
    mine = frame[frame["model"] == "Model A"]
    assert mine["verdict"].tolist() == [record_verdict(record[s]) for s in range(4)]
    assert mine["causes"].tolist() == [", ".join(verified_views.causes_of(record[s])) for s in range(4)]
    assert set(frame[frame["model"] == "Model B"]["image"]) == {"images not reachable: org/offline (offline test)"}
    assert [t["caption"].split(" · ")[1] for t in thumbnails] == frame["model"].tolist()  # 4 each: rows align
    # the matched group: the same content's other polarities, one pick away
    assert [value for _, value in group["choices"]] == [
        "directional_pos2_neg0_001",
        "directional_pos1_neg1_001",
        "directional_pos0_neg2_001",
    ]
    assert group["value"] == "directional_pos1_neg1_001"
    other = world["client"].predict("directional_pos0_neg2_001", api_name="/compare")
    assert "directional_pos0_neg2_001" in other[0] and set(table(other[4])["model"]) == {"Model A", "Model B"}


def test_compare_of_an_unknown_prompt_is_an_error(world):
    header, *_ = world["client"].predict("color_pos9_neg9_000", api_name="/compare")
    assert header.startswith("**Error:**") and "unknown prompt id" in header


def test_model_figures_come_with_their_data_as_csv(world):
    world["client"].predict(api_name="/leaderboard")  # fills the model picker, as opening the app does
    setting_plot, causes_plot, files = world["client"].predict("Model A", api_name="/model_figures")
    assert setting_plot is not None and causes_plot is not None
    data = {Path(served(f)).name: pd.read_csv(served(f)) for f in files_of(files)}
    assert sorted(data) == [
        "model_a_accuracy_by_setting.csv",
        "model_a_failure_causes.csv",
        "model_a_statement_accuracy.csv",
    ]
    records = world["records"]["Model A"]
    row = leaderboard_row(records, "model_a")
    accuracy = data["model_a_accuracy_by_setting.csv"]
    assert dict(zip(accuracy["key"], accuracy["accuracy"], strict=True)) == pytest.approx(
        {k: row[k] for k in ("1:0", "0:1", "2:0", "1:1", "0:2", "2:1", "1:2", "2:2")}
    )
    causes = data["model_a_failure_causes.csv"]
    failed = [s.cause for r in records for s in r.statements if not s.satisfied]
    assert causes.groupby("cause")["count"].sum().to_dict() == {c: failed.count(c) for c in CAUSES}
    _, _, files = world["client"].predict("Waiting", api_name="/model_figures")  # a pending entry: its claims
    assert (
        sorted(Path(served(f)).name for f in files_of(files))[0]
        == "waiting_accuracy_by_setting_claimed_not_verified.csv"
    )
