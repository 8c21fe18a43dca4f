"""Identities, names and the downscaling of big uploads (space/identity.py, space/names.py,
space/resources.py), and the ``hf:<user>`` path through the submit handler as the app calls it."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pytest
from PIL import Image

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.config import PRESETS
from negt2ibench.api import Evaluator
from space.handlers import Handlers, WorkDir
from space.identity import address_identity, check_forwarded_allow_ips, requester, shown_identity
from space.names import clean, clip, confusable_key, csv_cell, http_link, name_key, plain_markdown, revision_name
from space.resources import MAX_SCORE_PIXELS, bounded_image
from space.store import SQLiteStore
from space.submissions import SubmissionLimits, hub_images
from tests.helpers.space_helpers import RectanglePerception, write_results


def test_requester_is_the_account_or_the_hashed_peer_never_a_header():
    peer = SimpleNamespace(
        username=None, headers={"x-forwarded-for": "6.6.6.6"}, client=SimpleNamespace(host="10.0.0.1")
    )
    assert requester(peer) == address_identity("10.0.0.1") and "10.0.0.1" not in requester(peer)
    assert requester(peer).startswith("ip:") and requester(peer) != address_identity("6.6.6.6")
    assert requester(peer, SimpleNamespace(username="bob")) == "hf:bob"
    assert requester(SimpleNamespace(username="alice", client=None)) == "alice"
    assert requester(None) == "anonymous"
    assert shown_identity("ip:192.0.2.1") == address_identity("192.0.2.1")  # an old entry's bare address
    assert shown_identity("hf:bob") == "hf:bob"
    assert check_forwarded_allow_ips("127.0.0.1, 10.0.0.0/8") == "127.0.0.1, 10.0.0.0/8"
    for bad in ("*", "proxy.example.org"):
        with pytest.raises(ValueError):
            check_forwarded_allow_ips(bad)


def test_names_are_cleaned_and_lookalikes_share_a_key():
    assert clean(" First\u200b  Model\u202e ") == "First Model"
    assert name_key("ＡＬＩＣＥ\u200d") == "alice"
    same = ["First Model", "F\u0456rst Model", "First model", "First-Model", "Fir\u200bst Model"]
    assert len({confusable_key(name) for name in same}) == 1
    assert confusable_key("rn") == confusable_key("m") and confusable_key("l0l") == confusable_key("1O1")
    assert confusable_key("Alice") != confusable_key("Alicia")
    assert plain_markdown("[x](u) **b** `c` <i>&") == "\\[x\\]\\(u\\) \\*\\*b\\*\\* \\`c\\` &lt;i&gt;&amp;"
    assert [csv_cell(v) for v in ("=1+1", "+1", "-1", "@a", "\tx", "ok", -1.5)] == [
        "'=1+1",
        "'+1",
        "'-1",
        "'@a",
        "'\tx",
        "ok",
        -1.5,
    ]
    assert http_link(" https://example.org/a ") == "https://example.org/a" and http_link("") == ""
    for bad in ("javascript:alert(1)", "data:text/html,x", "//example.org", "https://"):
        with pytest.raises(ValueError):
            http_link(bad)
    assert revision_name("") == "main" and revision_name("v1.0/rc") == "v1.0/rc"
    with pytest.raises(ValueError):
        revision_name("../main")
    assert clip("x" * 1000, 10) == "xxxxxxxxxx… (1,000 characters)"


def test_signed_in_submitters_are_their_account(tmp_path):
    """The submit handler as gradio calls it on a Space: the request and a `gr.OAuthProfile`."""
    prompts = load_prompts(None)[:10]
    store = SQLiteStore(tmp_path / "lb.sqlite")
    on = Handlers(
        prompts=prompts,
        index=PromptIndex(prompts),
        store=store,
        score_on_gpu=None,  # type: ignore[arg-type]
        config=PRESETS["current"],
        open_images=hub_images,
        limits=SubmissionLimits(),
        require_login=True,
        work_dir=WorkDir(),
    )
    results = write_results(tmp_path / "r.jsonl", prompts, "toy_model")
    request = SimpleNamespace(username=None, client=SimpleNamespace(host="127.0.0.1"))
    refused, _ = on.submit(str(results), "Toy", "", "org/toy", "main", request, None)
    assert "sign in with Hugging Face" in refused and store.list_entries() == []
    profile = gr.OAuthProfile({"preferred_username": "alice", "name": "Alice", "picture": "", "profile": ""})
    status, listed = on.submit(str(results), "Toy", "", "org/toy", "main", request, profile)
    assert "status **validated**" in status
    [entry] = store.list_entries()
    assert entry.submitter == "hf:alice" and list(listed["submitter"]) == ["hf:alice"]
    on.work_dir.cleanup()


def photos() -> dict[str, Image.Image]:
    from skimage import data

    return {name: Image.fromarray(getattr(data, name)()).convert("RGB") for name in ("chelsea", "coffee")}


def verdicts(record):
    """What a record decides: the image's verdict, each statement's verdict and cause, the objects found."""
    return (
        record.passed,
        [(s.satisfied, s.cause) for s in record.statements],
        [o.present for o in record.objects],
    )


@pytest.mark.slow
def test_downscaled_uploads_keep_their_records():
    """Real photographs (skimage.data) upscaled 2x and 4x and downscaled back to their own size,
    and upscaled 8x and given the Space's bound (4.2 MP): the copy the models get has the same
    verdicts, causes and objects as the original (and, at 2x and 4x, as the upscaled image), with the tests'
    tiny real models and with the rectangle double (which places the objects by fractions of the
    image, so the relations are decided). Boxes and other pixel measurements are in the copy's pixels."""
    from tests.helpers.perception_helpers import tiny_perception

    index = PromptIndex(load_prompts(None))
    chosen = [index[p] for p in ("color_pos1_neg0_000", "directional_pos1_neg1_000", "depth_pos1_neg0_000")]
    for perception in (tiny_perception(), RectanglePerception()):
        evaluator = Evaluator(perception=perception)
        for name, photo in photos().items():
            for factor, bound in (
                (2, photo.width * photo.height),
                (4, photo.width * photo.height),
                (8, MAX_SCORE_PIXELS),
            ):
                big = photo.resize((photo.width * factor, photo.height * factor), Image.Resampling.LANCZOS)
                given = bounded_image(big, bound)
                assert given.width * given.height <= bound < big.width * big.height
                for prompt in chosen:
                    records = [evaluator.score(image, prompt).record for image in (photo, big, given)]
                    assert verdicts(records[2]) == verdicts(records[1]) == verdicts(records[0]), (name, factor)
