"""A hostile submitter, played through the app's API (gradio_client against a launch
on 127.0.0.1, the tests' perception double, a local images repo, the default limits).

- Fabricated scores: files claiming passes on 5% and 25% of images the re-score fails are
  rejected; an honest file with 5 of its verdicts flipped, the most the spot check tolerates, is
  verified whichever images its sample draws (the rates themselves are in test_space_verification).
- Identities: X-Forwarded-For from a peer that is not a configured proxy changes nothing; behind
  a configured proxy the client is the hop the proxy appended, whatever the client wrote before it.
- Names: a homoglyph of a ranked model's name is refused; Markdown, HTML and math in names are
  shown as typed; a name that is a spreadsheet formula is neutralised in the CSV; links are http(s).
- Bounded resources: the cache stays under its bound after 50 refused 10 MB uploads; one client
  scores one image at a time while another client is served.
- Forgeries: a file whose causes are rewritten is rejected; look-alikes of a ranked name (the
  Cyrillic palochka, a small capital R, no space) are refused; a try after a rejection is held,
  not ranked on its sample, and its detail is marked "claimed, not verified"; a flood of malformed
  uploads from one client does not delay another's valid submission.
"""

from __future__ import annotations

import random
import re
import threading
from pathlib import Path

import pandas as pd
import pytest
from gradio_client import Client, handle_file

from dataset_builder.loading import load_prompts
from leaderboard.intake.identity import address_identity
from leaderboard.intake.submissions import ImagesUnreachable, ParquetImages, SubmissionLimits
from leaderboard.store.sqlite_store import Entry, SQLiteStore
from space.app import build_app
from tests.helpers.gradio_values import shown as update_value
from tests.helpers.jobs_helpers import double_jobs
from tests.helpers.net import launch_local, local_client
from tests.helpers.space_helpers import RectanglePerception, scene_png, wait_for, write_images_dataset, write_results

SPLIT = "toy_model"
IMAGES_REPO = "org/toy-images"


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)


@pytest.fixture(scope="module")
def files(prompts, tmp_path_factory):
    root = tmp_path_factory.mktemp("attacks")
    keys = [(p.prompt_id, s) for p in prompts for s in range(4)]

    def claiming(count: int, seed: int) -> Path:
        """Every image fails (what the double finds on the flat images) but `count` of them, chosen
        with `seed`, are claimed as passes."""
        chosen = set(random.Random(seed).sample(keys, count))
        path = root / f"claims_{count}_{seed}.jsonl"
        return write_results(path, prompts, SPLIT, passed=lambda p, s: (p.prompt_id, s) in chosen)

    return {
        # honest: 5 flips in all, the most the spot check tolerates (5 of its 652): verified whichever
        # images its sample draws (a share instead, 0.2%, was rejected when the draw held 6 of them)
        "honest": claiming(5, 1),
        "inflated_5": claiming(round(0.05 * len(keys)), 2),
        "inflated_25": claiming(round(0.25 * len(keys)), 3),
        "true": write_results(root / "true.jsonl", prompts, SPLIT, passed=False),
        "hub": root / "hub",  # ORG/NAME folders as the Hub repos, for the verification jobs
        "images": write_images_dataset(root / "hub" / IMAGES_REPO, prompts, SPLIT),
        "scene": scene_png(root / "scene.png"),
    }


def images_of(files):
    def open_images(repo_id, revision, split):
        if repo_id != IMAGES_REPO:
            raise ImagesUnreachable(f"images not reachable: {repo_id} (offline test)")
        return ParquetImages.from_folder(files["images"], split)

    return open_images


class Launched:
    def __init__(self, demo, store):
        self.demo, self.store, self.url = demo, store, launch_local(demo)
        self.clients: list[Client] = []

    def client(self, forwarded_for: str | None = None) -> Client:
        headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else None
        self.clients.append(local_client(self.url, verbose=False, headers=headers))
        return self.clients[-1]

    def close(self) -> None:
        for client in self.clients:
            client.close()
        self.demo.close()


@pytest.fixture
def behind_proxy(prompts, files, tmp_path):
    """The app behind a proxy at 127.0.0.1 (its X-Forwarded-For is believed), as on a Space."""
    store = SQLiteStore(tmp_path / "lb.sqlite")
    demo = build_app(
        prompts=prompts,
        store=store,
        perception=RectanglePerception(),
        open_images=images_of(files),
        forwarded_allow_ips="127.0.0.1",
        # the spot checks run as job subprocesses (the real command, the rectangle double as the scorer)
        verify_backend=double_jobs(store.locator(), tmp_path, images_from=files["hub"], secret=b"attack tests"),
        recheck_every=0.5,
    )
    app = Launched(demo, store)
    yield app
    app.close()


@pytest.fixture
def direct(prompts, files, tmp_path):
    """The app with no proxy configured (the default of `negt2ibench serve`)."""
    store = SQLiteStore(tmp_path / "lb.sqlite")
    demo = build_app(prompts=prompts, store=store, perception=RectanglePerception(), open_images=images_of(files))
    app = Launched(demo, store)
    yield app
    app.close()


def submit(client: Client, path: Path, name: str, *, link: str = "", repo: str = IMAGES_REPO) -> str:
    status, _ = client.predict(handle_file(str(path)), name, link, repo, "main", api_name="/submit")
    return status


def shown(markdown: str) -> str:
    """The text a Markdown string shows (every escape removed)."""
    return re.sub(r"\\(.)", r"\1", markdown)


def final(store, name: str):
    wait_for(
        lambda: any(e.model_name == name and e.status in ("verified", "rejected") for e in store.list_entries()),
        f"the spot check of {name}",
        timeout=300,
    )
    return next(e for e in store.list_entries() if e.model_name == name)


@pytest.mark.slow
def test_fabricated_inflations_are_rejected_and_honest_flips_verified(behind_proxy, files):
    app = behind_proxy
    for k, (name, file) in enumerate(
        [("Inflated Five", "inflated_5"), ("Inflated Quarter", "inflated_25"), ("Honest Model", "honest")]
    ):
        assert "status **validated**" in submit(app.client(f"198.51.100.{k + 1}"), files[file], name)
    five, quarter, honest = (final(app.store, n) for n in ("Inflated Five", "Inflated Quarter", "Honest Model"))
    for cheat in (five, quarter):
        assert cheat.status == "rejected", cheat.reason
        assert cheat.reason.startswith("spot check: ") and "more than the 5 of 652 allowed" in cheat.reason
    assert honest.status == "verified", honest.reason
    assert honest.verification.checked == 652 and honest.verification.disagreements <= 5
    board, _, _, _ = app.client().predict(api_name="/leaderboard")
    frame = pd.DataFrame(board["data"], columns=board["headers"])
    label = dict(zip(frame["model"], frame["status"], strict=True))
    assert set(label) == {"Honest Model", "SD 1.5", "SD 1.5 + NegationCLIP"}  # the cheats are not ranked
    found = honest.verification.disagreements
    plural = "" if found == 1 else "s"
    mark = "images not reproduced"  # flat PNGs without a generation record: nothing to regenerate
    assert label["Honest Model"] == f"verified (sampled, n=652, {found} disagreement{plural}) · {mark}"


@pytest.mark.slow
def test_forged_forwarded_for_from_an_untrusted_peer_changes_nothing(direct, files):
    app = direct
    for k in range(5):  # the default limit: 5 a day; the images are offline, so each waits (pending)
        status = submit(app.client(f"203.0.113.{k}, 198.51.100.{k}"), files["true"], f"Model {k}", repo="org/offline")
        assert "status **validated**" in status, status
    status = submit(app.client("192.0.2.99"), files["true"], "Model 5", repo="org/offline")
    assert status.startswith("**Error:** not submitted") and "limit 5" in status  # still one client
    submitters = {e.submitter for e in app.store.list_entries()}
    assert submitters == {address_identity("127.0.0.1")}  # the socket peer, hashed
    listed = app.client().predict(api_name="/submissions")
    cells = " ".join(str(cell) for row in listed["data"] for cell in row)
    assert "127.0.0.1" not in cells and "203.0.113" not in cells and "198.51.100" not in cells


@pytest.mark.slow
def test_behind_a_proxy_the_client_is_the_hop_it_appended(behind_proxy, files):
    app = behind_proxy
    owner = "198.51.100.7"
    assert "status **validated**" in submit(app.client(owner), files["true"], "Owner Model", repo="org/offline")
    # the attacker writes the owner's address; the proxy appends the attacker's own
    status = submit(app.client(f"{owner}, 203.0.113.9"), files["true"], "Owner Model", repo="org/offline")
    assert "was submitted by another user" in shown(status)
    [entry] = app.store.list_entries()
    assert entry.submitter == address_identity(owner)


@pytest.mark.slow
def test_names_are_only_names(behind_proxy, files):
    app = behind_proxy
    client = app.client("198.51.100.20")
    assert "status **validated**" in submit(client, files["true"], "First Model", link="https://example.org/a")
    assert final(app.store, "First Model").status == "verified"
    # a Cyrillic і: looks the same, refused (for its owner too)
    homoglyph = submit(client, files["true"], "F\u0456rst Model")
    assert shown(homoglyph).startswith("**Error:** not submitted: the model name mixes the Latin and Cyrillic scripts")
    other = app.client("198.51.100.21")
    for link in ("javascript:alert(1)", "ftp://example.org", "example.org"):
        refused = submit(other, files["true"], "Linked Model", link=link)
        assert "the link must be an http(s) address" in shown(refused)
    # markup and formulas are refused as names (`leaderboard.text.submitted_names.name_problem`), in one line
    markup = "[x](https://e.vil) **b** `c` <img src=x onerror=alert(1)> $\\frac{$"
    status = shown(submit(other, files["true"], markup))
    assert status.startswith("**Error:** not submitted: U+002A ASTERISK is not allowed in a model name")
    formula = '=HYPERLINK("https://e.vil","x")'
    assert "U+003D EQUALS SIGN is not allowed" in shown(submit(app.client("198.51.100.22"), files["true"], formula))
    # a stored name the name rules would refuse is still shown as text everywhere it goes
    legacy = Entry(
        model_name=markup, model_key="legacy_markup", submitter="legacy", status="verified", row={"model": markup}
    )
    app.store.add_submission(legacy)
    legacy_formula = Entry(
        model_name=formula, model_key="legacy_formula", submitter="legacy2", status="verified", row={"model": formula}
    )
    app.store.add_submission(legacy_formula)
    as_text = markup.replace("<", "&lt;").replace(">", "&gt;")  # HTML as entities, the rest escaped
    viewer = app.client()
    board, csv_path, _, _ = viewer.predict(api_name="/leaderboard")  # also fills this session's model picker
    written = pd.read_csv(csv_path)
    assert "'" + formula in set(written["model"]) and formula not in set(written["model"])
    detail, plot, _ = viewer.predict(markup, api_name="/model_detail")
    assert shown(detail).startswith(f"**{as_text}**: verified") and "<img" not in detail and plot is not None
    assert "the plot failed" not in shown(detail)  # "$\\frac{$" is text, not mathtext


@pytest.mark.slow
def test_the_cache_stays_under_its_bound_after_fifty_refused_uploads(prompts, files, tmp_path, monkeypatch):
    cache = tmp_path / "gradio_cache"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(cache))  # this app's uploads only
    bound = 64 * 2**20
    demo = build_app(
        prompts=prompts,
        store=SQLiteStore(tmp_path / "lb.sqlite"),
        perception=RectanglePerception(),
        open_images=images_of(files),
        cache_bytes=bound,
        limits=SubmissionLimits(invalid_per_hour=50),  # each one reaches the parser (the hourly limit: tested apart)
    )
    app = Launched(demo, None)
    try:
        client = app.client()
        for k in range(50):
            junk = tmp_path / f"junk{k}.jsonl"
            junk.write_bytes(random.Random(k).randbytes(10 * 2**20))  # distinct: gradio keeps uploads by content
            status = submit(client, junk, f"Junk {k}")
            junk.unlink()
            assert status.startswith("**Error:** not submitted") and "malformed results file" in shown(status)
        on_disk = sum(path.stat().st_size for path in cache.rglob("*") if path.is_file())
        assert 0 < on_disk <= bound
    finally:
        app.close()


class GatedPerception(RectanglePerception):
    """The double, blocking each observation until `release` is set (and saying it started)."""

    def __init__(self):
        super().__init__()
        self.started, self.release = threading.Event(), threading.Event()

    def observe(self, images, prompts):
        self.started.set()
        assert self.release.wait(120)
        return super().observe(images, prompts)


@pytest.mark.slow
def test_one_client_scores_one_image_at_a_time(prompts, files, tmp_path):
    perception = GatedPerception()
    demo = build_app(
        prompts=prompts,
        store=SQLiteStore(tmp_path / "lb.sqlite"),
        perception=perception,
        forwarded_allow_ips="127.0.0.1",
    )
    app = Launched(demo, None)
    try:
        scene = handle_file(str(files["scene"]))
        busy = app.client("198.51.100.30")
        first = busy.submit(scene, "color_pos1_neg0_000", "", api_name="/score")
        assert perception.started.wait(60)  # its image is with the models
        _, second, _, _ = busy.predict(scene, "color_pos1_neg0_000", "", api_name="/score")
        assert "you already have an image being scored here" in shown(second)
        perception.release.set()
        _, other, _, _ = app.client("198.51.100.31").predict(scene, "color_pos1_neg0_000", "", api_name="/score")
        assert "Image verdict" in other
        assert "Image verdict" in first.result(timeout=60)[1]
    finally:
        perception.release.set()
        app.close()


# -- what the spot check compares, look-alike names, tries, a flood of malformed uploads ------


def settled(store, name: str, statuses=("verified", "rejected", "held")):
    wait_for(
        lambda: any(e.model_name == name and e.status in statuses for e in store.list_entries()),
        f"the spot check of {name}",
        timeout=300,
    )
    return next(e for e in store.list_entries() if e.model_name == name and e.status in statuses)


@pytest.fixture(scope="module")
def causes_rewritten(files, tmp_path_factory):
    """A forged file: the true records, every `subject_missing` rewritten to `forbidden_rendered`."""
    path = tmp_path_factory.mktemp("causes") / "causes.jsonl"
    text = files["true"].read_text(encoding="utf-8")
    path.write_text(text.replace('"subject_missing"', '"forbidden_rendered"'), encoding="utf-8")
    return path


@pytest.mark.slow
def test_rewritten_causes_lookalike_names_and_retries_get_nothing(behind_proxy, files, causes_rewritten):
    app = behind_proxy
    owner, mallory = app.client("198.51.100.50"), app.client("198.51.100.51")
    assert "status **validated**" in submit(owner, files["true"], "First Model")
    assert settled(app.store, "First Model").status == "verified"
    # 1. every cause rewritten (verdicts kept): each re-scored image disagrees on its causes
    assert "status **validated**" in submit(mallory, causes_rewritten, "Cause Model")
    caught = settled(app.store, "Cause Model")
    assert caught.status == "rejected" and "failed (forbidden_rendered)" in caught.reason, caught.reason
    assert "re-scored positive 0 failed (subject_missing)" in caught.reason or "re-scored negated" in caught.reason
    # 2. look-alikes of a ranked name (palochka, small capital R, no space, digit and bar for letters),
    # refused for another account and for the owner
    for lookalike in ("First Mode\u04cf", "Fi\u0280st Model", "FirstModel", "F1RST MODE|"):
        for client in (mallory, owner):
            refused = shown(submit(client, files["true"], lookalike))
            assert refused.startswith("**Error:** not submitted"), (ascii(lookalike), refused)
            assert (
                "looks like the model 'First Model'" in refused
                or "submitted by another user" in refused
                or "mixes the Latin and Cyrillic scripts" in refused
                or "is not allowed in a model name" in refused
            )
    # 3. a second try after the rejection: its sample agrees (the true file), yet it is not ranked on it
    assert "status **validated**" in submit(mallory, files["true"], "Second Try")
    retry = settled(app.store, "Second Try")
    assert retry.status == "held" and retry.verification.disagreements == 0
    assert f"a spot check rejected another submission of this account ({caught.submission_id[:8]})" in retry.reason
    assert "ranked only after a full re-score" in retry.reason and "verify --full" in retry.reason
    viewer = app.client()
    board, _, picker, waiting = viewer.predict(api_name="/leaderboard")
    ranked = {row[board["headers"].index("model")] for row in board["data"]}
    assert "Second Try" not in ranked and "Cause Model" not in ranked and "First Model" in ranked
    held = [row for row in update_value(waiting)["data"] if row[0] == "Second Try"]
    assert held and held[0][1] == "held" and "held: a spot check rejected" in held[0][2]
    # 4. its detail: the claimed numbers are marked in the table itself
    status, _, causes = viewer.predict("Second Try", api_name="/model_detail")
    causes = update_value(causes)
    assert "held" in shown(status) and causes["data"]
    assert all(row[0].endswith("(claimed, not verified)") for row in causes["data"])


@pytest.mark.slow
def test_a_flood_of_malformed_uploads_does_not_delay_another_client(behind_proxy, files, tmp_path, monkeypatch):
    """One client's six malformed files (100 MB ones in the attack, small here: the first one's reading
    is held open instead) while another client submits a valid file: the other's is validated while
    the flooder's first is still being read, and the flooder's other five are refused unread."""
    import leaderboard.intake.submissions as submissions_module

    entered, release, reads = threading.Event(), threading.Event(), []
    original = submissions_module._load_results

    def load(path, *args):
        reads.append(path.name)
        if path.name.startswith("flood"):
            entered.set()
            assert release.wait(120)
        return original(path, *args)

    monkeypatch.setattr(submissions_module, "_load_results", load)
    app = behind_proxy
    flooder = app.client("198.51.100.60")
    floods = []
    for k in range(6):
        path = tmp_path / f"flood{k}.jsonl"
        path.write_text("{not json\n")
        floods.append(flooder.submit(handle_file(str(path)), f"Flood {k}", "", IMAGES_REPO, "main", api_name="/submit"))
    try:
        assert entered.wait(120)  # one flood file is being read, holding the flooder's slot
        status = submit(app.client("198.51.100.61"), files["true"], "Patient Model")
        assert "status **validated**" in status and not release.is_set()
    finally:
        release.set()
    answers = [shown(job.result(timeout=120)[0]) for job in floods]
    assert sum("malformed results file" in answer for answer in answers) == 1
    assert sum("you already have a submission being checked here" in answer for answer in answers) == 5
    assert len([name for name in reads if name.startswith("flood")]) == 1 and "true.jsonl" in reads
