"""The Space on the Hub: a verified entry's `.eval_results`, `leaderboard publish`, and the Hub's own
leaderboard checked (`leaderboard hub-check` and the board's `hub` column) on a payload in the Hub
API's shape (`tests/data/hub/leaderboard.json`), every Hub call through a recording `HfApi` double.

The payload's three rows and the entries below give the three outcomes by hand:
- stable-diffusion-v1-5/stable-diffusion-v1-5: 14.5 on the Hub, our verified entry's overall 14.5 → same;
- black-forest-labs/FLUX.2-dev: 41.3 on the Hub, ours 39.8 → differs by 41.3 − 39.8 = +1.5 points;
- someone/unverified-t2i: 60.0 on the Hub, no entry here → not verified here.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from huggingface_hub import parse_eval_result_entries

from dataset_builder.benchmark import EVAL_TASKS
from leaderboard.hub.entry_eval_results import (
    entry_eval_results,
    entry_page_url,
    model_repo_of,
    scored_date,
    verification_note,
)
from leaderboard.hub.hub_check import (
    NOT_REACHABLE,
    HubLeaderboard,
    HubRow,
    hub_cells,
    hub_matches,
    hub_status_markdown,
    read_hub_rows,
)
from leaderboard.store.entries import FreshDraw, Regeneration
from leaderboard.store.ranking import REPORTED
from leaderboard.store.sqlite_store import Entry, SQLiteStore, Verification
from negt2ibench.cli import main
from tests.helpers.hub_helpers import RecordingHfApi, http_error, leaderboard_payload
from tests.helpers.net import local_client

REPO = Path(__file__).resolve().parents[3]
SPACE = "https://huggingface.co/spaces/org/negt2ibench-space"
DATASET = "org/NegT2IBench"
REVISION = "e" * 40  # the dataset's commit the recording double's `dataset_info` answers
SUBMITTED, RESCORED = 1_796_000_000, 1_796_100_000  # 2026-11-30 00:53:20 and 2026-12-01 04:40:00 UTC
CATEGORY_VALUES = {"color": 21.04, "material": 18.96, "directional": 9.65, "proximity": 9.1, "comparative": 8.0}


def _row(overall: float, depth: float = 7.25) -> dict:
    return {"model": "x", "overall": overall, "depth": depth, "1:0": 30.0, **CATEGORY_VALUES}


def _entry(name: str, link: str, overall: float, status: str = "verified", method: str = "sampled", **fields) -> Entry:
    verification = Verification(
        method=method,
        checked=577 if method == "sampled" else 19_200,
        disagreements=2,
        allowed=4 if method == "sampled" else None,
        total=19_200,
        at=RESCORED,
    )
    return Entry(
        created_at=SUBMITTED,
        model_name=name,
        model_key=name.lower().replace(" ", "_").replace(".", "_"),
        submitter="alice",
        link=link,
        status=status,
        row=_row(overall),
        evaluator_version="1.1.0",
        config_hash="bbc03f064ef3ab0c",
        verification=verification if status in ("verified", "rejected") else None,
        **fields,
    )


@pytest.fixture
def entries():
    return [
        _entry("SD 1.5", "https://huggingface.co/stable-diffusion-v1-5/stable-diffusion-v1-5", 14.5),
        _entry("FLUX.2 dev", "https://huggingface.co/black-forest-labs/FLUX.2-dev/tree/main", 39.8, method="full"),
        _entry("Paper Only", "https://arxiv.org/abs/2601.00001", 50.0),  # no Hub model page
        _entry("Waiting", "https://huggingface.co/someone/unverified-t2i", 60.0, status="pending"),
    ]


def test_model_repos_come_from_hub_model_links():
    def repo(link):
        return model_repo_of(Entry(model_name="m", model_key="m", submitter="a", link=link))

    assert repo("https://huggingface.co/org/model") == "org/model"
    assert repo("https://hf.co/org/model/blob/main/README.md") == "org/model"
    assert repo("https://huggingface.co/datasets/org/images") is None
    assert repo("https://huggingface.co/spaces/org/app") is None
    assert repo("https://example.org/org/model") is None and repo("") is None


def test_a_verified_entry_gets_yaml_with_its_page_and_how_it_was_verified(entries):
    sd, flux, _, waiting = entries
    page = entry_page_url(SPACE, sd.submission_id)
    assert page == f"{SPACE}?entry={sd.submission_id}"
    text = entry_eval_results(sd, dataset_id=DATASET, dataset_revision=REVISION, page_url=page)
    parsed = parse_eval_result_entries(yaml.safe_load(text))
    assert [e.task_id for e in parsed] == [task.id for task in EVAL_TASKS]
    assert "evaluation_framework" not in text
    # sampled: the ranked numbers are the submitted ones, scored before the submission; full: the re-score's
    assert {(e.dataset_revision, e.date) for e in parsed} == {(REVISION, "2026-11-30T00:53:20Z")}
    assert (scored_date(sd), scored_date(flux)) == ("2026-11-30T00:53:20Z", "2026-12-01T04:40:00Z")
    # The row's numbers as `report` prints them: 21.04 → 21.0, 18.96 → 19.0, 9.65 (stored 9.6500…04) → 9.7,
    # 7.25 (exact, a tie) → 7.2.
    assert {e.task_id: e.value for e in parsed} == {
        "overall": 14.5,
        "color": 21.0,
        "material": 19.0,
        "directional": 9.7,
        "proximity": 9.1,
        "comparative": 8.0,
        "depth": 7.2,
    }
    assert {(e.dataset_id, e.source_url, e.source_name) for e in parsed} == {
        (DATASET, page, "NegT2IBench Space (verified entry)")
    }
    assert "sampled n=577, d=2 (577 of 19,200 images re-scored, 2 disagreed; at most 4 may)" in parsed[0].notes
    assert "negt2ibench evaluator 1.1.0, preset current, config bbc03f064ef3ab0c" in parsed[0].notes
    assert verification_note(flux) == "verified by the NegT2IBench Space: full re-score of 19,200 images"
    with pytest.raises(ValueError, match="only verified entries get an .eval_results file; this one is pending"):
        entry_eval_results(waiting, dataset_id=DATASET, dataset_revision=REVISION, page_url=page)
    rejected = _entry("Bad", "", 10.0, status="rejected")
    with pytest.raises(ValueError, match="this one is rejected"):
        entry_eval_results(rejected, dataset_id=DATASET, dataset_revision=REVISION, page_url=page)


def test_the_yaml_notes_say_whether_the_images_were_reproduced_and_the_fresh_draw(entries):
    sd = entries[0]
    page = entry_page_url(SPACE, sd.submission_id)

    def notes(entry) -> str:
        text = entry_eval_results(entry, dataset_id=DATASET, dataset_revision=REVISION, page_url=page)
        return parse_eval_result_entries(yaml.safe_load(text))[0].notes

    assert notes(sd).endswith("; images not reproduced: no regeneration check ran for it")
    closed = Regeneration(
        outcome="not_reproduced", reason="images not reproduced: made by a function (`generate_with`)"
    )
    assert notes(sd.model_copy(update={"regeneration": closed})).endswith(
        "; images not reproduced: made by a function (`generate_with`)"
    )
    reproduced = Regeneration(outcome="reproduced", reason="ok", model_id="org/m", commit="a" * 40, checked=114)
    draw = FreshDraw(
        seed=4294967297, prompts=432, images=1728, accuracy=10.04, interval=[7.9, 12.2], public=14.5,
        public_interval=[13.9, 15.1], gap=-4.46, gap_interval=[-6.7, -2.2],
    )  # fmt: skip
    assert notes(sd.model_copy(update={"regeneration": reproduced, "fresh_draw": draw})).endswith(
        "; images reproduced: 114 of 114 regenerated from org/m@aaaaaaaaaaaa agree; fresh draw (seed 4294967297, "
        "432 prompts): 10.0% against 14.5%, gap -4.5 [-6.7, -2.2]"
    )


def test_the_yaml_notes_name_the_pinned_images_commit_and_never_a_branch(entries):
    sd = entries[0]
    page = entry_page_url(SPACE, sd.submission_id)

    def notes_and_text(**fields) -> tuple[str, str]:
        text = entry_eval_results(
            sd.model_copy(update=fields), dataset_id=DATASET, dataset_revision=REVISION, page_url=page
        )
        return parse_eval_result_entries(yaml.safe_load(text))[0].notes, text

    pinned = "c0ffee" + "1" * 34
    notes, text = notes_and_text(images_repo="org/sd-images", images_revision=pinned, images_ref="release-branch")
    assert f"; images: org/sd-images@{pinned}; images not reproduced" in notes
    assert "release-branch" not in text
    assert {e.source_url for e in parse_eval_result_entries(yaml.safe_load(text))} == {page}  # the page, still
    # Stored before revisions were pinned: a branch, a tag, an abbreviated or upper-case commit is no pin.
    for legacy in ("release-branch", "v1.0", pinned[:12], pinned.upper(), ""):
        notes, text = notes_and_text(images_repo="org/sd-images", images_revision=legacy, images_ref=legacy)
        assert "; images: org/sd-images, not pinned to a commit (stored before revisions were pinned); " in notes
        assert not legacy or legacy not in text
    # A repo id stored before ids were checked: clipped, escaped, and the YAML still loads.
    notes, _ = notes_and_text(images_repo="evil/" + "r" * 200_000 + "\ufffe\x1b[2J", images_revision=pinned)
    assert "images: evil/" + "r" * 188 + f"… (200,010 characters)@{pinned}" in notes
    notes, text = notes_and_text(images_repo="evil/x\ufffe\x1b[2J\u202e", images_revision=pinned)
    assert f"images: evil/x\\ufffe\\x1b[2J\\u202e@{pinned}" in notes and "\ufffe" not in text
    assert "images: (no repo recorded), not pinned to a commit" in notes_and_text()[0]


def test_the_hub_page_states_the_spot_check_plan_and_the_scorer_as_the_code_has_them():
    from dataset_builder.loading import load_prompts
    from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
    from evaluator.config import EVALUATOR_VERSION, PRESETS
    from leaderboard.checks.spot_check_policy import spot_check_plan

    text = " ".join((REPO / "docs" / "hub.md").read_text(encoding="utf-8").split())
    total = len(load_prompts(None)) * SAMPLES_PER_PROMPT
    plan = spot_check_plan(total)  # 652 of 19,200, at most 5 (leaderboard/checks/spot_check_policy.py)
    assert set(re.findall(r"\bn=(\d+)", text)) == {str(plan.sample_size)}
    assert set(re.findall(r"(\d[\d,]*) of (?:the )?([\d,]+) images re-scored", text)) == {
        (str(plan.sample_size), f"{total:,}")
    }
    assert set(re.findall(r"at most (\d+) (?:may|disagreed)", text)) == {str(plan.max_disagreements)}
    scorers = set(re.findall(r"evaluator (\d+\.\d+\.\d+), preset current, config ([0-9a-f]{16})", text))
    assert scorers == {(EVALUATOR_VERSION, PRESETS["current"].config_hash)}
    assert f"of {total:,} images scored" in text


def test_the_recorded_leaderboard_gives_the_three_outcomes(entries):
    api = RecordingHfApi()
    rows = read_hub_rows(api, DATASET).rows
    # every row, fine-tunes too: the Hub's default (base_model_only) leaves out repos that declare a base_model
    assert api.calls == [("get_dataset_leaderboard", {"repo_id": DATASET, "base_model_only": False})]
    matches = {m.row.model_id: m for m in hub_matches(rows, entries)}
    sd = matches["stable-diffusion-v1-5/stable-diffusion-v1-5"]
    flux = matches["black-forest-labs/FLUX.2-dev"]
    other = matches["someone/unverified-t2i"]  # only a pending entry names it: not verified here
    assert (sd.outcome, sd.text(), sd.entry.model_name) == ("same", "verified here, same value", "SD 1.5")
    assert (flux.outcome, flux.text(), flux.ours) == ("differs", "verified here, differs by +1.5 points", 39.8)
    assert (other.outcome, other.text(), other.entry) == ("not_verified", "not verified here", None)


def test_same_means_equal_at_the_published_precision(entries):
    def outcome(hub_value):
        return hub_matches([HubRow(1, "stable-diffusion-v1-5/stable-diffusion-v1-5", hub_value)], entries)[0]

    assert outcome(14.54).outcome == "same"  # 14.5 as published
    assert outcome(14.56).text() == "verified here, differs by +0.1 points"
    assert outcome(0.145).text() == "verified here, differs by -14.4 points"  # a fraction, not a percentage


def test_the_cache_keeps_the_last_reading_and_never_raises(entries):
    api = RecordingHfApi()
    clock = iter([1000.0, 2000.0, 3000.0])
    board = HubLeaderboard(DATASET, lambda: api, clock=lambda: next(clock))
    assert board.snapshot.rows is None
    first = board.refresh()
    assert len(first.rows) == 3 and first.problem == "" and first.read_at == 1000.0 and first.revision == REVISION
    import httpx2

    api.error = httpx2.ConnectError("[Errno -3] Temporary failure in name resolution")
    second = board.refresh()
    assert second.rows == first.rows and second.problem == NOT_REACHABLE and second.tried_at == 2000.0
    assert second.revision == REVISION  # the last commit read is kept too
    assert "Hub not reachable since" in hub_status_markdown(second, entries)
    api.error = http_error(404, "404 Not Found")
    third = HubLeaderboard(DATASET, lambda: api).refresh()
    assert third.rows is None and third.problem.startswith("no Hub leaderboard for org/NegT2IBench yet")


def test_the_board_column_and_the_status_line(entries):
    api = RecordingHfApi()
    snapshot = HubLeaderboard(DATASET, lambda: api).refresh()
    names = ["SD 1.5", "FLUX.2 dev", "Paper Only", "SD 1.5"]
    statuses = ["verified (sampled, n=577, 2 disagreements)", "verified (full re-score)", "verified", REPORTED]
    assert hub_cells(names, statuses, entries, snapshot) == [
        "on the Hub: same value",
        "on the Hub: 41.3 (+1.5 points)",
        "no Hub model link",
        "",  # the paper's row of the same name is not ours
    ]
    line = hub_status_markdown(snapshot, entries)
    assert "3 rows; 1 verified here, same value; 1 verified here, different value; 1 not verified here" in line
    api.error = OSError("network down")
    down = HubLeaderboard(DATASET, lambda: api).refresh()
    assert hub_cells(names[:1], statuses[:1], entries, down) == [NOT_REACHABLE]
    assert "**Hub not reachable**" in hub_status_markdown(down, entries)
    assert hub_status_markdown(None, entries).startswith("Hub check: off")


# ------------------------------------------------------------------------------------------ the CLI


@pytest.fixture
def home(tmp_path, entries):
    store = SQLiteStore(tmp_path / "leaderboard.sqlite")
    for entry in entries:
        store.add_submission(entry)
    return tmp_path


@pytest.fixture
def hub_api(monkeypatch):
    import huggingface_hub

    api = RecordingHfApi()
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda token=None: api)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_test")
    monkeypatch.delenv("NEGT2I_RESULTS_REPO", raising=False)
    return api


def run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exited:
        code = exited.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_hub_check_prints_each_row_with_its_outcome(home, hub_api, entries, capsys):
    code, out, _ = run(["leaderboard", "hub-check", "--dataset-id", DATASET, "--home", str(home)], capsys)
    assert code == 0
    sd, flux = entries[0].submission_id[:8], entries[1].submission_id[:8]
    assert out.splitlines()[1:] == [
        "#1 someone/unverified-t2i (open pull request #3): 60.0 on the Hub: not verified here",
        f"#2 black-forest-labs/FLUX.2-dev: 41.3 on the Hub: verified here, differs by +1.5 points; ours 39.8, "
        f"entry {flux} (FLUX.2 dev)",
        "#3 stable-diffusion-v1-5/stable-diffusion-v1-5 (open pull request #7): 14.5 on the Hub: verified here, "
        f"same value; ours 14.5, entry {sd} (SD 1.5)",
        "3 Hub rows: 1 verified here with the same value, 1 verified here with another value, 1 not verified here",
    ]
    hub_api.error = http_error(404, "404 Client Error: Not Found")
    code, _, err = run(["leaderboard", "hub-check", "--dataset-id", DATASET, "--home", str(home)], capsys)
    assert code == 1 and "could not read the Hub leaderboard of org/NegT2IBench: the Hub answered HTTP 404" in err
    code, _, err = run(["leaderboard", "hub-check", "--home", str(home)], capsys)
    assert code == 2 and "--dataset-id ORG/NAME (or set NEGT2I_HUB_DATASET)" in err


def test_publish_opens_the_pull_request_with_the_entry_yaml(home, hub_api, entries, capsys):
    sd = entries[0]
    argv = [
        "leaderboard",
        "publish",
        sd.submission_id[:8],
        "--model-repo",
        "stable-diffusion-v1-5/stable-diffusion-v1-5",
    ]
    argv += ["--dataset-id", DATASET, "--space-url", SPACE, "--home", str(home)]
    code, _, err = run([*argv, "--dry-run"], capsys)  # the tests run with HF_HUB_OFFLINE=1
    assert code == 2 and "HF_HUB_OFFLINE is set: pass --dataset-revision SHA, the commit of org/NegT2IBench" in err
    argv += ["--dataset-revision", REVISION]
    code, out, _ = run([*argv, "--dry-run"], capsys)
    assert code == 0 and out.rstrip().endswith(
        "dry run: no pull request opened on stable-diffusion-v1-5/stable-diffusion-v1-5"
    )
    assert hub_api.calls == []
    code, out, _ = run(argv, capsys)
    assert code == 0 and out.rstrip().endswith(
        "to stable-diffusion-v1-5/stable-diffusion-v1-5: "
        "https://huggingface.co/stable-diffusion-v1-5/stable-diffusion-v1-5/discussions/1"
    )
    [(name, sent)] = hub_api.calls
    assert name == "create_commit" and sent["create_pr"] is True and sent["repo_type"] == "model"
    content = sent["files"][".eval_results/negt2ibench.yaml"].decode("utf-8")
    parsed = parse_eval_result_entries(yaml.safe_load(content))
    assert parsed[0].source_url == f"{SPACE}?entry={sd.submission_id}" and parsed[0].value == 14.5
    assert parsed[0].dataset_revision == REVISION


@pytest.mark.parametrize(
    "which, model_repo, message, code",
    [
        (3, "someone/unverified-t2i", "only verified entries get an .eval_results file; this one is pending", 1),
        (
            0,
            "org/another-model",
            "links the model stable-diffusion-v1-5/stable-diffusion-v1-5, not org/another-model",
            1,
        ),
        (None, "org/m", "no submission 'ffffffff' in the store", 1),
    ],
)
def test_publish_refuses_what_it_must_not_send(home, hub_api, entries, capsys, which, model_repo, message, code):
    wanted = entries[which].submission_id[:8] if which is not None else "ffffffff"
    argv = ["leaderboard", "publish", wanted, "--model-repo", model_repo, "--dataset-id", DATASET]
    argv += ["--dataset-revision", REVISION]
    found, _, err = run([*argv, "--space-url", SPACE, "--home", str(home)], capsys)
    assert found == code and message in err and hub_api.calls == []


def test_publish_needs_the_space_address(home, hub_api, entries, capsys, monkeypatch):
    monkeypatch.delenv("NEGT2I_SPACE_URL", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    argv = ["leaderboard", "publish", entries[0].submission_id, "--model-repo", "org/m", "--dataset-id", DATASET]
    code, _, err = run([*argv, "--home", str(home)], capsys)
    assert code == 2 and "--space-url URL (or set NEGT2I_SPACE_URL)" in err


# ------------------------------------------------------------------------------------ the Space's handlers


def test_an_entry_page_opens_that_entry_and_pending_ones_have_no_yaml(tmp_path, entries):
    from space.shared_state import WorkDir
    from space.tabs.leaderboard.leaderboard_handlers import LeaderboardHandlers

    store = SQLiteStore(tmp_path / "lb.sqlite")
    for entry in entries:
        store.add_submission(entry)
    api = RecordingHfApi()
    board = HubLeaderboard(DATASET, lambda: api)
    work = WorkDir()
    try:
        on = LeaderboardHandlers(store, work, board, DATASET, SPACE)
        unread = on.eval_results("FLUX.2 dev")  # before the Hub was read: no commit for dataset.revision
        not_read = "No `.eval_results` file yet: the commit of org/NegT2IBench was not read from the Hub."
        assert unread == (not_read, "", None)
        board.refresh()
        flux = entries[1]
        request = SimpleNamespace(query_params={"entry": flux.submission_id})
        shown, _, picker, _ = on.leaderboard(request)
        frame = shown.data  # the board as shown: a Styler over the frame
        assert picker["value"] == "FLUX.2 dev"  # the page of the entry picks its model
        assert dict(zip(frame["model"], frame["hub"], strict=True))["FLUX.2 dev"] == "on the Hub: 41.3 (+1.5 points)"
        assert on.leaderboard(SimpleNamespace(query_params={}))[2]["value"] is None  # no detail until one is picked
        note, text, path = on.eval_results("FLUX.2 dev")
        assert f"{SPACE}?entry={flux.submission_id}" in note and "full re-score of 19,200 images" in text
        assert f"revision: {REVISION}" in text and "date: '2026-12-01T04:40:00Z'" in text
        assert open(path, encoding="utf-8").read() == text
        assert on.eval_results("Waiting") == (
            "No `.eval_results` file: only verified entries get an .eval_results file; this one is pending.",
            "",
            None,
        )
        assert "1 verified here, different value" in on.hub_status()
    finally:
        work.cleanup()


# ------------------------------------------------------------------------------------------ the app


@pytest.mark.slow
def test_the_app_shows_the_hub_column_status_and_yaml_and_survives_an_unreachable_hub(tmp_path, entries):
    import pandas as pd

    from dataset_builder.loading import load_prompts
    from space.app import build_app
    from tests.helpers.net import launch_local
    from tests.helpers.space_helpers import RectanglePerception, wait_for

    store = SQLiteStore(tmp_path / "lb.sqlite")
    for entry in entries:
        store.add_submission(entry)
    api = RecordingHfApi()
    demo = build_app(
        prompts=load_prompts(None)[:10],
        store=store,
        perception=RectanglePerception(),
        recheck_every=None,
        hub_dataset=DATASET,
        space_url=SPACE,
        hub_api=lambda: api,
        hub_refresh_every=0.2,
    )

    def readings():
        return sum(name == "get_dataset_leaderboard" for name, _ in api.calls)

    client = local_client(launch_local(demo), verbose=False)
    try:
        wait_for(lambda: readings() >= 2, "the Hub read at start-up, then again")  # periodic, not once
        board, _, _, _ = client.predict(api_name="/leaderboard")
        frame = pd.DataFrame(board["data"], columns=board["headers"])
        hub = dict(zip(frame["model"] + " | " + frame["status"], frame["hub"], strict=True))
        assert hub["SD 1.5 | verified (sampled, n=577, 2 disagreements) · images not reproduced"] == (
            "on the Hub: same value"
        )
        assert hub["SD 1.5 | reported (paper)"] == ""
        # Model ids are strangers' text: shown as plain text (Markdown escaped).
        assert "1 not verified here: someone\\/unverified\\-t2i." in client.predict(api_name="/hub_status")
        note, text, path = client.predict("SD 1.5", api_name="/eval_results")
        assert f"source:\n    url: {SPACE}?entry={entries[0].submission_id}" in text
        assert open(path, encoding="utf-8").read().rstrip("\n") == text  # the code box drops the last newline
        assert client.predict("Waiting", api_name="/eval_results")[1] == ""

        api.error = OSError("network down")
        calls = readings()
        wait_for(lambda: readings() > calls + 1, "a reading that fails")
        status = client.predict(api_name="/hub_status")
        assert "Hub not reachable since" in status and "Error" not in status  # the last reading, said to be old
        fresh = build_app(
            prompts=load_prompts(None)[:10],
            store=store,
            perception=RectanglePerception(),
            recheck_every=None,
            hub_dataset=DATASET,
            hub_api=lambda: api,
        )
        other = local_client(launch_local(fresh), verbose=False)
        try:
            board_of_fresh = fresh.hub_reader.run.__self__  # the app's HubLeaderboard
            wait_for(lambda: board_of_fresh.snapshot.tried_at is not None, "the fresh app's first (failing) reading")
            assert board_of_fresh.snapshot.problem == NOT_REACHABLE
            board, _, _, _ = other.predict(api_name="/leaderboard")
            frame = pd.DataFrame(board["data"], columns=board["headers"])
            assert set(frame["hub"]) == {"Hub not reachable", ""}
            assert "**Hub not reachable**" in other.predict(api_name="/hub_status")
        finally:
            other.close()
            fresh.close()
    finally:
        client.close()
        demo.close()
    demo.hub_reader._thread.join(timeout=30)  # closing the app stops its Hub readings
    assert not demo.hub_reader._thread.is_alive()


# ------------------------------------------------------------------ hostile rows, and text that stays text


def hostile_payload() -> list[dict]:
    """The recorded rows, and rows a stranger can make the Hub list: a rank that is no number, escape
    sequences and a bidi override in a model id, a 5,000-character id, values that are no score, and a
    pull request beside a repo's merged file (with another value, ranked above it)."""
    rows = leaderboard_payload()
    template = dict(rows[1])
    hostile = [
        {"rank": "x", "modelId": "evil/rank"},
        {"rank": 5, "modelId": "evil/\x1b[2Jclear"},
        {"rank": 6, "modelId": "evil/a\u202eb"},
        {"rank": 7, "modelId": "evil/" + "n" * 5000},
        {"rank": 8, "modelId": "evil/huge", "value": 1e308},
        {"rank": 9, "modelId": "evil/nan", "value": float("nan")},
        {"rank": 10, "modelId": "evil/inf", "value": float("inf")},
        {"rank": 11, "modelId": "evil/negative", "value": -5.0},
        {"rank": 0, "modelId": "black-forest-labs/FLUX.2-dev", "value": 99.9, "pullRequest": 12},
    ]
    return rows + [{**template, **row} for row in hostile]


def test_each_hub_row_is_read_on_its_own(entries):
    reading = read_hub_rows(RecordingHfApi(payload=hostile_payload()), DATASET)
    assert [problem.split(":")[0] for problem in reading.bad] == ["row 4", "row 5", "row 6", "row 7", "row 12"]
    assert "its rank 'x' is not a positive whole number" in reading.bad[0]
    by_id = {row.model_id: row for row in reading.rows}
    assert (
        by_id["evil/huge"].value is None
        and by_id["evil/huge"].problem == "value out of range (a percentage is 0 to 100)"
    )
    assert by_id["evil/nan"].problem == "value nan is not a finite number" and by_id["evil/inf"].value is None
    assert by_id["evil/negative"].value is None
    flux = next(m for m in hub_matches(reading.rows, entries) if m.row.model_id == "black-forest-labs/FLUX.2-dev")
    assert flux.row.pull_request is None and flux.row.value == 41.3 and flux.others == ()  # rank 0: a bad row


@pytest.mark.parametrize("pull", ["3", 0, -2, True, 3.5, "", [], {}])
def test_a_row_whose_pull_request_number_is_unreadable_counts_as_a_pull_request(entries, pull):
    """Only a row that names no pull request is a merged file: a number that is not a positive whole
    number ("3", 0, a bool ...) is read as an open pull request, never in the merged file's place."""
    template = dict(leaderboard_payload()[1])
    forged = {**template, "rank": 1, "modelId": "black-forest-labs/FLUX.2-dev", "value": 99.0, "pullRequest": pull}
    reading = read_hub_rows(RecordingHfApi(payload=[*leaderboard_payload(), forged]), DATASET)
    flux = next(m for m in hub_matches(reading.rows, entries) if m.row.model_id == "black-forest-labs/FLUX.2-dev")
    assert flux.row.value == 41.3 and not flux.row.in_pull_request  # the merged row is compared ...
    assert [(o.value, o.in_pull_request, o.pull_request) for o in flux.others] == [(99.0, True, None)]  # ... not it


def test_a_row_without_a_pull_request_is_the_merged_file_and_a_numbered_one_names_it(entries):
    template = dict(leaderboard_payload()[1])
    numbered = {**template, "rank": 1, "modelId": "black-forest-labs/FLUX.2-dev", "value": 99.0, "pullRequest": 7}
    reading = read_hub_rows(RecordingHfApi(payload=[*leaderboard_payload(), numbered]), DATASET)
    flux = next(m for m in hub_matches(reading.rows, entries) if m.row.model_id == "black-forest-labs/FLUX.2-dev")
    assert flux.row.value == 41.3 and flux.row.pull_request is None and not flux.row.in_pull_request
    [other] = flux.others
    assert other.in_pull_request and other.pull_request == 7 and other.pull_request_text() == "pull request #7"


def test_hub_check_reports_hostile_rows_as_text_and_goes_on(home, hub_api, entries, capsys):
    hub_api.payload = hostile_payload()
    hub_api.payload[-1]["rank"] = 4  # the pull request's row of FLUX (a valid rank this time)
    code, out, _ = run(["leaderboard", "hub-check", "--dataset-id", DATASET, "--home", str(home)], capsys)
    assert code == 0 and "\x1b" not in out and "\u202e" not in out
    assert "bad row (row 5: its model id: 'evil/\\x1b[2Jclear'" in out  # the escape shown as text
    assert "bad row (row 6: its model id: 'evil/a\\u202eb'" in out and "bad row (row 4: its rank 'x'" in out
    assert "bad row (row 7: its model id: 'evil/nnnn" in out and "n" * 300 not in out  # clipped
    assert "#8 evil/huge: on the Hub: not compared: value out of range (a percentage is 0 to 100)" in out
    assert "#9 evil/nan: on the Hub: not compared: value nan is not a finite number" in out
    assert "1e+308" not in out and "100000000000" not in out and "+nan" not in out
    flux = entries[1].submission_id[:8]
    assert (
        f"#2 black-forest-labs/FLUX.2-dev: 41.3 on the Hub: verified here, differs by +1.5 points; ours 39.8, "
        f"entry {flux} (FLUX.2 dev)\n  2 rows name this repo; compared: #2 (a merged file before a pull request, "
        "then the Hub's rank); not compared: #4 (pull request #12)"
    ) in out
    assert out.rstrip().endswith(
        "7 repos (8 Hub rows): 1 verified here with the same value, 1 verified here with another value, "
        "1 not verified here, 4 with a value that is not a score; 4 rows could not be read"
    )


def test_the_space_shows_hostile_rows_clipped_and_keeps_the_reading(entries):
    snapshot = HubLeaderboard(DATASET, lambda: RecordingHfApi(payload=hostile_payload())).refresh()
    assert snapshot.problem == "" and len(snapshot.bad) == 5  # a bad row is not "Hub not reachable"
    line = hub_status_markdown(snapshot, entries)
    assert "5 rows could not be read" in line and "4 with a value that is not a score" in line
    assert len(line) < 2000 and "n" * 200 not in line


def test_the_pull_request_says_the_name_as_text(home, hub_api, entries, capsys):
    hostile = _entry(
        "[x](https://e.vil) @everyone <img src=x onerror=alert(1)> `b`",
        "https://huggingface.co/org/hostile",
        20.0,
    )
    store = SQLiteStore(home / "leaderboard.sqlite")
    store.add_submission(hostile)
    argv = ["leaderboard", "publish", hostile.submission_id[:8], "--model-repo", "org/hostile"]
    argv += ["--dataset-id", DATASET, "--space-url", SPACE, "--home", str(home), "--dataset-revision", REVISION]
    code, _, _ = run(argv, capsys)
    assert code == 0
    [(_, sent)] = hub_api.calls
    assert sent["commit_description"] == (
        "NegT2IBench scores of `` [x](https://e.vil) @everyone <img src=x onerror=alert(1)> `b` `` "
        f"(entry {hostile.submission_id[:8]}), verified by the NegT2IBench Space ({SPACE})."
    )


def test_the_eval_results_yaml_of_any_stored_name_loads():
    legacy = _entry("Name\ufffe\x1b[2J\u202e", "https://huggingface.co/org/m", 20.0)  # a name the rules refuse
    text = entry_eval_results(legacy, dataset_id=DATASET, dataset_revision=REVISION, page_url=SPACE)
    assert yaml.safe_load(text) and "\\ufffe\\x1b[2J\\u202e" in text.splitlines()[0]


def test_a_hub_id_is_shown_whole_up_to_100_characters_and_clipped_beyond():
    # docs/hub.md: "at most its first 100 characters followed by "…" and its full length"
    from leaderboard.hub.hub_check import HubMatch, hub_check_lines

    whole, clipped = "o" * 3 + "/" + "m" * 96, "o" * 4 + "/" + "m" * 96  # 100 and 101 characters, both valid ids
    rows = [HubRow(1, whole, 40.0), HubRow(2, clipped, 41.0)]
    lines = hub_check_lines([HubMatch(row, "not_verified") for row in rows])
    assert lines[0].startswith(f"#1 {whole}: 40.0 on the Hub")
    assert lines[1].startswith(f"#2 {clipped[:100]}… (101 characters): 41.0 on the Hub")


def test_a_rows_source_link_is_read_when_it_is_one():
    row = SimpleNamespace(rank=1, model_id="org/model", value=41.3, pull_request=None)
    assert (
        HubRow.of(SimpleNamespace(**vars(row), source={"url": "https://e.org/log"})).source_url == "https://e.org/log"
    )
    assert HubRow.of(SimpleNamespace(**vars(row), source=None)).source_url is None
    assert HubRow.of(SimpleNamespace(**vars(row), source="https://e.org/log")).source_url is None  # not a mapping
    assert HubRow.of(SimpleNamespace(**vars(row), source={"url": 7})).source_url is None
