"""What a submitter controls reaches no further than its own entry, through the app's API
(gradio_client against a launch on 127.0.0.1, the rectangle double, local images repos standing in
for the Hub, each with its commits): a revision pinned when stored, a traversal in a model key and
a huge repo id refused, a visitor paging a slow repo holding only its share, the cache bound after one page,
look-alike and distinct names, text no sink can carry, hostile Hub rows, the labels of an entry
that is not verified, and a huge file of repeated records refused at its first repeat."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from gradio_client import Client, handle_file
from PIL import Image

from dataset_builder.loading import load_prompts
from leaderboard.intake.submissions import SubmissionLimits
from leaderboard.store.image_sources import ImagesUnreachable, ParquetImages
from leaderboard.store.sqlite_store import SQLiteStore, Verification
from space.app import build_app
from tests.helpers.gallery_helpers import add_entry, some_prompts, varied_results
from tests.helpers.gradio_values import shown as update_value
from tests.helpers.hub_helpers import RecordingHfApi, leaderboard_payload
from tests.helpers.name_cases import DISTINCT, LOOKALIKES, OWNER_NAME
from tests.helpers.net import launch_local, local_client
from tests.helpers.space_helpers import RectanglePerception, write_images_dataset, write_results

SPLIT = "toy_model"
REPO = "org/toy-images"


def shown(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown)


class Commits:
    """A Hub images repo with branches: `resolve_revision` answers the commit a branch names now,
    and the factory reads the folder of the commit it is given (and records every read)."""

    def __init__(self, folders: dict[str, Path], branches: dict[str, str]):
        self.folders, self.branches, self.asked = folders, branches, []

    def resolve_revision(self, repo: str, revision: str) -> str:
        return self.branches.get(revision, revision)

    def __call__(self, repo: str, revision: str, split: str):
        self.asked.append((repo, revision, split))
        if revision not in self.folders:
            raise ImagesUnreachable(f"images not reachable: {repo}@{revision} (offline test)")
        return ParquetImages.from_folder(self.folders[revision], split)


class App:
    def __init__(self, demo, store):
        self.demo, self.store, self.url = demo, store, launch_local(demo)
        self.clients: list[Client] = []

    def client(self, forwarded_for: str | None = None) -> Client:
        headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else None
        self.clients.append(local_client(self.url, verbose=False, headers=headers, download_files=False))
        return self.clients[-1]

    def close(self):
        for client in self.clients:
            client.close()
        self.demo.close()


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)[:12]


@pytest.fixture
def results(prompts, tmp_path):
    return write_results(tmp_path / "true.jsonl", prompts, SPLIT, passed=False)


def submit(client, path, name, repo=REPO, revision="main") -> str:
    status, _ = client.predict(handle_file(str(path)), name, "", repo, revision, api_name="/submit")
    return shown(status)


def verify(store, name: str):
    entry = next(e for e in store.list_entries() if e.model_name == name)
    check = Verification(method="sampled", checked=48, disagreements=0, allowed=5, total=48)
    return store.update_entry(entry.submission_id, status="verified", reason="verified (test)", verification=check)


def test_the_images_revision_is_pinned_when_stored(prompts, results, tmp_path):
    folders = {
        "a" * 40: write_images_dataset(tmp_path / "first", prompts, SPLIT),
        "b" * 40: tmp_path / "rewritten",
    }
    commits = Commits(folders, {"main": "a" * 40})
    store = SQLiteStore(tmp_path / "lb.sqlite")
    demo = build_app(
        prompts=prompts, store=store, perception=RectanglePerception(), open_images=commits, recheck_every=None
    )
    app = App(demo, store)
    try:
        client = app.client()
        assert "status **validated**" in submit(client, results, "Gallery Target")
        entry = verify(store, "Gallery Target")
        assert (entry.images_revision, entry.images_ref) == ("a" * 40, "main")
        # `main` is rewritten: other images, another commit
        write_images_dataset(folders["b" * 40], prompts, SPLIT)
        commits.branches["main"] = "b" * 40
        summary, thumbnails, _, _ = client.predict(
            "Gallery Target", "any", "any", "any", "any", "any", 1, api_name="/gallery"
        )
        assert len(thumbnails) == 24 and "at commit aaaaaaaaaaaa (submitted as main)" in shown(summary)
        assert {revision for _, revision, _ in commits.asked} == {"a" * 40}  # the branch never reaches a reader
        _, detail, _ = client.predict("Gallery Target", prompts[0].prompt_id, 0, api_name="/gallery_item")
        assert "at commit aaaaaaaaaaaa" in shown(detail)
    finally:
        app.close()


def test_a_traversal_key_and_a_huge_repo_id_are_refused(prompts, tmp_path):
    commits = Commits({}, {"main": "a" * 40})
    store = SQLiteStore(tmp_path / "lb.sqlite")
    demo = build_app(
        prompts=prompts, store=store, perception=RectanglePerception(), open_images=commits, recheck_every=None
    )
    app = App(demo, store)
    try:
        client = app.client()
        traversal = "../../../victim/private-ds/resolve/main/images/x"
        hostile = write_results(tmp_path / "key.jsonl", prompts, traversal)
        refused = submit(client, hostile, "Traversal Model")
        assert (
            "invalid results file: the model key '../../../victim/private-ds/resolve/main/images/x' is not a "
            in refused
        )
        long_repo = "o" * 200_002 + "/images"
        refused = submit(client, write_results(tmp_path / "ok.jsonl", prompts, SPLIT), "Long Repo", repo=long_repo)
        assert "is not a Hub repo id ORG/NAME" in refused and len(refused) < 700
        assert store.list_entries() == [] and commits.asked == []  # nothing stored, nothing read
        listed = client.predict(api_name="/submissions")
        assert len(str(listed)) < 5000
    finally:
        app.close()


def noise_repo(folder: Path, prompts, split: str, side: int) -> Path:
    """An images repo of noise PNGs (each about 3 bytes a pixel), one per prompt × sample."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    rows, cells = [], []
    for prompt in prompts:
        for sample in range(4):
            buffer = io.BytesIO()
            Image.fromarray(rng.integers(0, 255, (side, side, 3), dtype=np.uint8)).save(buffer, format="PNG")
            rows.append((prompt.prompt_id, sample))
            cells.append({"bytes": buffer.getvalue(), "path": None})
    table = pa.table(
        {
            "prompt_id": [r[0] for r in rows],
            "sample_index": pa.array([r[1] for r in rows], pa.int32()),
            "image": cells,
        }
    )
    (folder / "images").mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "images" / f"{split}-00000-of-00001.parquet", row_group_size=16)
    return folder


@pytest.mark.slow
def test_the_cache_bound_holds_after_one_page(prompts, tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    add_entry(store, "Noise", varied_results(prompts, "noise"), images_repo="org/noise")
    folder = noise_repo(tmp_path / "noise", prompts, "noise", side=512)
    bound = 2 * 2**20  # a page's drawings are about 18 MB: the bound must act at once, not at the sweep
    demo = build_app(
        prompts=prompts,
        store=store,
        perception=RectanglePerception(),
        open_images=lambda repo, revision, split: ParquetImages.from_folder(folder, split),
        recheck_every=None,
        cache_bytes=bound,
    )
    app = App(demo, store)
    try:
        _, thumbnails, _, _ = app.client().predict("Noise", "any", "any", "any", "any", "any", 1, api_name="/gallery")
        assert len(thumbnails) == 24
        kept = sum(p.stat().st_size for folder in demo.work_dir.existing() for p in folder.rglob("*") if p.is_file())
        assert 0 < kept <= bound
    finally:
        app.close()


class SlowImages:
    """An images factory whose repo "org/slow" answers only when `release` is set; `entered` is set
    once a read of it waits, and `most_inside` is the most reads of it that waited at once."""

    def __init__(self, folder: Path):
        self.folder, self.entered, self.release = folder, threading.Event(), threading.Event()
        self.inside = self.most_inside = 0
        self.lock = threading.Lock()

    def __call__(self, repo: str, revision: str, split: str):
        source = ParquetImages.from_folder(self.folder, split)
        if repo != "org/slow":
            return source
        gate = self

        class Slow:
            def images(self, keys):
                with gate.lock:
                    gate.inside += 1
                    gate.most_inside = max(gate.most_inside, gate.inside)
                gate.entered.set()
                try:
                    assert gate.release.wait(300)
                finally:
                    with gate.lock:
                        gate.inside -= 1
                yield from source.images(keys)

        return Slow()


def _answered(jobs, count: int) -> list:
    """The first COUNT of JOBS (gradio_client jobs) to be answered, waited for (300 s at most)."""
    import concurrent.futures

    of_future = {job.future: job for job in jobs}  # a Job's own state is its inner future's
    done: list = []
    pending = set(of_future)
    while len(done) < count:
        finished, pending = concurrent.futures.wait(pending, timeout=300, return_when="FIRST_COMPLETED")
        assert finished, "no page was answered within 300 s"
        done += [of_future[future] for future in finished]
    assert len(done) == count, f"{len(done)} pages answered, {count} expected"
    return done


@pytest.mark.slow
def test_a_visitor_paging_a_slow_repository_holds_only_its_share(prompts, tmp_path, monkeypatch):
    """One visitor asks for page after page of a slow repo, whose reads wait at a gate; its older pages
    are answered at once (their fetches dropped or stopped), its newest waits for the repo, one read
    of its at a time; meanwhile another visitor's fresh page of another repo is answered whole."""
    from space.verified_images import verified_source

    monkeypatch.setattr(verified_source, "PAGE_SECONDS", 3600.0)  # a page waits for its repo however long
    store = SQLiteStore(tmp_path / "lb.sqlite")
    add_entry(store, "Fast", varied_results(prompts, "fast"), images_repo="org/fast")
    add_entry(store, "Slow", varied_results(prompts, "slow"), images_repo="org/slow", submitter="bob")
    write_images_dataset(tmp_path / "repo", prompts, "fast")
    images = SlowImages(write_images_dataset(tmp_path / "repo", prompts, "slow"))
    demo = build_app(
        prompts=prompts,
        store=store,
        perception=RectanglePerception(),
        open_images=images,
        recheck_every=None,
        forwarded_allow_ips="127.0.0.1",  # each client's X-Forwarded-For is its address: two visitors
    )
    app = App(demo, store)
    pages = [("any", "any", "any", "any", "any", number) for number in (1, 2, 1, 2)]
    try:
        pager = app.client("198.51.100.2")
        first = pager.submit("Slow", *pages[0], api_name="/gallery")
        assert images.entered.wait(300)  # its first page waits on the slow repo
        later = [pager.submit("Slow", *page, api_name="/gallery") for page in pages[1:]]
        superseded = _answered([first, *later], 3)  # all but its newest page, each answered at once
        assert not images.release.is_set()
        for job in superseded:
            summary, *rest = job.result()
            assert summary.endswith("was not fetched: a newer page of yours came first (only the newest is fetched).")
            assert all(update == {"__type__": "update"} for update in rest)  # the page shown is left as it is
        [newest] = [job for job in [first, *later] if all(job is not other for other in superseded)]
        _, fresh, _, _ = app.client("198.51.100.1").predict("Fast", *pages[0], api_name="/gallery")
        assert len(fresh) == 24 and not any("unavailable" in t["caption"] for t in fresh)
        assert not newest.done() and not images.release.is_set()  # answered while the slow page still waits
        images.release.set()
        _, thumbnails, _, _ = newest.result(timeout=300)
        assert len(thumbnails) == 24 and not any("unavailable" in t["caption"] for t in thumbnails)
        assert images.most_inside == 1  # one read of that visitor's at a time, however many pages it asked for
    finally:
        images.release.set()
        app.close()


@pytest.mark.slow
def test_every_lookalike_is_refused_and_every_distinct_name_accepted(prompts, results, tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    commits = Commits({}, {"main": "a" * 40})
    demo = build_app(
        prompts=prompts,
        store=store,
        perception=RectanglePerception(),
        open_images=commits,
        recheck_every=None,
        forwarded_allow_ips="127.0.0.1",
        limits=SubmissionLimits(per_day=len(DISTINCT) + 1),
    )
    app = App(demo, store)
    try:
        owner, mallory = app.client("198.51.100.10"), app.client("198.51.100.11")
        assert "status **validated**" in submit(owner, results, OWNER_NAME)
        for name in LOOKALIKES:
            refused = submit(mallory, results, name)
            assert refused.startswith("**Error:** not submitted"), (ascii(name), refused)
            assert "\n" not in refused.strip(), ascii(name)
        for name in DISTINCT:
            accepted = submit(mallory, results, name)
            assert "status **validated**" in accepted, (ascii(name), accepted)
        assert sorted(e.model_name for e in store.list_entries()) == sorted([OWNER_NAME, *DISTINCT])
    finally:
        app.close()


def test_text_no_sink_can_carry_and_hostile_hub_rows(prompts, results, tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    every_category = some_prompts(load_prompts(None), per_setting=1)  # a number for every task of the YAML
    legacy = add_entry(store, "Legacy\ufffe\x1b[2J", varied_results(every_category, "legacy"), images_repo="org/x")
    store.update_entry(legacy.submission_id, link="https://huggingface.co/org/legacy")
    payload = leaderboard_payload() + [
        {**leaderboard_payload()[0], "rank": 4, "modelId": "evil/" + "n" * 5000},
        {**leaderboard_payload()[0], "rank": 5, "modelId": "evil/nan", "value": float("nan")},
        {**leaderboard_payload()[0], "rank": "x", "modelId": "evil/rank"},
    ]
    demo = build_app(
        prompts=prompts,
        store=store,
        perception=RectanglePerception(),
        open_images=Commits({}, {"main": "a" * 40}),
        recheck_every=None,
        hub_dataset="org/NegT2IBench",
        hub_api=lambda: RecordingHfApi(payload=payload),
    )
    app = App(demo, store)
    try:
        client = app.client()
        refused = submit(client, results, "Name\ufffe")
        assert refused.startswith("**Error:** not submitted: the model name holds the noncharacter U+FFFE")
        status = client.predict(api_name="/hub_status")
        assert "2 rows could not be read" in shown(status) and "1 with a value that is not a score" in shown(status)
        assert "n" * 200 not in status and "Hub not reachable" not in status
        client.predict(api_name="/leaderboard")
        _, text, _ = client.predict(legacy.model_name, api_name="/eval_results")
        assert yaml.safe_load(text) and "\\ufffe\\x1b[2J" in text.splitlines()[0]  # a name the rules refuse: escaped
        assert "images: org/x, not pinned to a commit" in text and "@main" not in text  # a branch revision: never named
    finally:
        app.close()


def test_the_files_and_figures_of_an_unverified_entry_say_so(prompts, tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    long_name = "Claims Hundred " + "x" * 85
    assert len(long_name) == 100
    add_entry(store, long_name, varied_results(prompts, "claims"), status="pending", images_repo="org/x")
    demo = build_app(prompts=prompts, store=store, perception=RectanglePerception(), recheck_every=None)
    app = App(demo, store)
    try:
        client = app.client()
        client.predict(api_name="/leaderboard")
        setting_plot, causes_plot, files = client.predict(long_name, api_name="/model_figures")
        paths = [f["path"] if isinstance(f, dict) else f.path for f in update_value(files)]
        assert len(paths) == 3 and all(path.endswith("_claimed_not_verified.csv") for path in paths)
        for path in paths:
            frame = pd.read_csv(path)
            assert not frame.empty and set(frame["verification"]) == {"claimed, not verified (pending)"}
        from space.tabs.leaderboard.detail_figures_tab import DetailFigures

        accuracy, causes, _ = (update["value"] for update in DetailFigures(store, demo.work_dir).figures(long_name))
        for figure in (accuracy, causes):  # the mark leads the title; the name wraps below it
            assert figure.get_suptitle().splitlines()[0] == "claimed, not verified"
            assert all(len(line) <= 64 for line in figure.get_suptitle().splitlines())
    finally:
        app.close()


@pytest.mark.slow
def test_a_huge_file_of_repeated_records_is_refused_at_its_first_repeat(prompts, results, tmp_path):
    lines = results.read_bytes()
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as handle:
        for _ in range(199 * 2**20 // len(lines)):
            handle.write(lines)
    assert 190 * 2**20 < huge.stat().st_size < 200 * 2**20
    store = SQLiteStore(tmp_path / "lb.sqlite")
    demo = build_app(
        prompts=prompts,
        store=store,
        perception=RectanglePerception(),
        open_images=Commits({}, {"main": "a" * 40}),
        recheck_every=None,
    )
    app = App(demo, store)
    try:
        refused = submit(app.client(), huge, "Huge Model")
        first = len(prompts) * 4 + 1  # the first line of the second copy
        assert f"malformed results file: huge.jsonl:{first}: {prompts[0].prompt_id} sample 0 is scored again" in refused
        assert store.list_entries() == []
    finally:
        app.close()
