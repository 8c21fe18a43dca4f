"""The spot check's own steps on hand-made records (leaderboard/checks/spot_check_run.py), fast: the batches it
re-scores and where it stops, the seed of a stored submission, the server's secret, and the one line
that says why a check could not run. (The check through a whole submission: test_submissions.)"""

from __future__ import annotations

import pytest
from PIL import Image

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import SECRET_ENV, verification_secret
from leaderboard.checks.spot_check_policy import SpotCheckPlan, draw_sample, results_digest, sample_seed
from leaderboard.checks.spot_check_run import spot_check, spot_check_failure, submission_seed
from leaderboard.store.image_sources import ImagesUnreachable
from negt2ibench.core.errors import MissingWeightsError, UserError
from tests.helpers.space_helpers import result_line


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)[:12]


@pytest.fixture(scope="module")
def truth(prompts) -> list[ResultRecord]:
    return [ResultRecord.model_validate(result_line(p, 0, "toy", passed=False)) for p in prompts]


class Images:
    """Every image asked for, grey, in the order asked; remembers the keys."""

    def __init__(self) -> None:
        self.asked: list = []

    def images(self, keys):
        self.asked += list(keys)
        for key in keys:
            yield key, Image.new("RGB", (32, 32), (128, 128, 128))


def scorer(truth: list[ResultRecord], calls: list[int]):
    """A re-score that answers each image with its record in TRUTH; CALLS gets each batch's size."""
    by_key = {(r.prompt_id, r.sample_index): r for r in truth}

    def score(images, prompts, model_key, sample_indices):
        assert model_key == "toy" and len(images) == len(prompts) == len(sample_indices)
        calls.append(len(images))
        return [by_key[p.prompt_id, s] for p, s in zip(prompts, sample_indices, strict=True)]

    return score


def test_the_sample_is_rescored_in_batches_and_every_image_counted(prompts, truth):
    calls: list[int] = []
    images = Images()
    plan = SpotCheckPlan(10, 0)
    outcome = spot_check(truth, images, PromptIndex(prompts), scorer(truth, calls), plan=plan, seed=7, batch_size=4)
    chosen = [(truth[k].prompt_id, 0) for k in draw_sample(len(truth), plan, 7)]
    assert images.asked == chosen and len(chosen) == 10
    assert calls == [4, 4, 2] and outcome.checked == 10
    assert outcome.accepted and outcome.disagreements == []


def test_a_sample_of_whole_batches_is_checked_once_and_a_short_answer_refused(prompts, truth):
    calls: list[int] = []
    plan = SpotCheckPlan(8, 0)
    outcome = spot_check(truth, Images(), PromptIndex(prompts), scorer(truth, calls), plan=plan, seed=3, batch_size=4)
    assert calls == [4, 4] and outcome.checked == 8 and outcome.accepted

    def one_short(images, batch, model_key, sample_indices):
        return scorer(truth, [])(images, batch, model_key, sample_indices)[:-1]

    with pytest.raises(ValueError):  # a re-score that answers for fewer images than asked is no comparison
        spot_check(truth, Images(), PromptIndex(prompts), one_short, plan=plan, seed=3, batch_size=4)


def test_the_check_stops_once_more_images_disagree_than_allowed(prompts, truth):
    claimed = [r.model_copy(update={"passed": True}) for r in truth]  # every image a claimed pass
    calls: list[int] = []
    plan = SpotCheckPlan(10, 1)
    outcome = spot_check(claimed, Images(), PromptIndex(prompts), scorer(truth, calls), plan=plan, seed=7, batch_size=3)
    assert calls == [3] and outcome.checked == 3  # 3 disagree after the first batch: more than 1, so it stops
    assert not outcome.accepted and len(outcome.disagreements) == 3
    assert "submitted pass, re-scored fail" in outcome.disagreements[0]
    tolerant = SpotCheckPlan(4, 4)
    outcome = spot_check(
        claimed, Images(), PromptIndex(prompts), scorer(truth, []), plan=tolerant, seed=7, batch_size=3
    )
    assert outcome.accepted and outcome.checked == 4 and len(outcome.disagreements) == 4  # at most 4 may: kept on


def test_the_seed_is_the_secret_the_id_and_the_results(truth):
    digest = results_digest(record.model_dump_json() for record in truth)
    seed = submission_seed("abc", truth, b"secret")
    assert seed == sample_seed(b"secret", "abc", digest)
    assert submission_seed("abd", truth, b"secret") != seed
    assert submission_seed("abc", truth, b"other") != seed
    assert submission_seed("abc", truth[:-1], b"secret") != seed


def test_the_secret_is_the_environments_else_this_processs(monkeypatch):
    monkeypatch.setenv(SECRET_ENV, "the space's secret")
    assert verification_secret() == b"the space's secret"
    monkeypatch.delenv(SECRET_ENV)
    own = verification_secret()
    assert len(own) == 32 and own == verification_secret() and own != b"the space's secret"
    monkeypatch.setenv(SECRET_ENV, "")
    assert verification_secret() == own


class QuotaError(Exception):
    """As `gradio.Error`: its text in `message`, its str() a repr."""

    def __init__(self, message: str) -> None:
        super().__init__(repr(message))
        self.message = message


@pytest.mark.parametrize(
    "error, line",
    [
        (ImagesUnreachable("images of org/x not reachable: 404"), "images of org/x not reachable: 404"),
        (MissingWeightsError("RFDETRSegXLarge"), "the scorer's model weights are not on this machine"),
        (RuntimeError("CUDA out of memory. Tried"), "the GPU ran out of memory"),
        (type("OutOfMemoryError", (Exception,), {})("no room"), "the GPU ran out of memory"),
        (
            QuotaError("You have exceeded your free ZeroGPU quota"),
            "no GPU time left here now (the ZeroGPU quota is spent)",
        ),
        (RuntimeError("GPU limit reached"), "no GPU time left here now (the ZeroGPU quota is spent)"),
        (UserError("bad\nsecond line"), "the spot check could not run: bad"),
        (ValueError(""), "the spot check failed here (an internal error; it is in the server's log)"),
        (ValueError("first\nsecond"), "the spot check failed here (an internal error; it is in the server's log)"),
    ],
)
def test_why_a_check_could_not_run_is_one_line_of_ours(error, line):
    # our sentence only: a library's own text (here "Tried", "no room", "first") goes to the log
    assert spot_check_failure(error) == line
