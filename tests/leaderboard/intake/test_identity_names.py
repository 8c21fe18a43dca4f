"""Identities, names and the downscaling of big uploads (leaderboard/intake/identity.py,
leaderboard/text/submitted_names.py, space/resources.py), and the ``hf:<user>`` path through the submit
handler as the app calls it."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pytest
from PIL import Image

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.config import PRESETS
from leaderboard.intake.identity import address_identity, check_forwarded_allow_ips, requester, shown_identity
from leaderboard.intake.submissions import SubmissionLimits, hub_images
from leaderboard.store.sqlite_store import SQLiteStore
from leaderboard.text.submitted_names import (
    clean,
    clip,
    confusable_key,
    csv_cell,
    http_link,
    name_key,
    plain_markdown,
    revision_name,
)
from negt2ibench.api import Evaluator
from space.app import Handlers
from space.resources import MAX_SCORE_PIXELS, bounded_image
from space.shared_state import WorkDir
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


# Look-alikes of three names, each with the code points that make it so (palochka, small capital
# R and no space first).
LOOKALIKES = {
    "First Model": [
        "First Mode\u04cf",  # Cyrillic palochka, which the confusables map to "i"
        "Fi\u0280st Model",  # LATIN LETTER SMALL CAPITAL R: not in TR39's table
        "FirstModel",  # no space
        "first_model",  # case and punctuation
        "FIRST MODEL",  # TR39 draws I as l but keeps i
        "First-Model.",
        "F1rst Model",
        "First ModeI",
        "First Mode|",
        "First Mode\u0131",  # dotless i
        "F\u0131rst Model",
        "F\u00edrst Model",  # i with acute
        "Fi\u0433st Model",  # Cyrillic ghe
        "First \u041codel",  # Cyrillic EM
        "F\u026arst Model",  # LATIN LETTER SMALL CAPITAL I
        "First Mo\u1d05el",  # LATIN LETTER SMALL CAPITAL D
        "First M\u1d0fdel",  # LATIN LETTER SMALL CAPITAL O
        "Fi\u027est Model",  # r with fishhook
        "First M\u00f8del",  # o with stroke
        "First Mode\u2113",  # script small l
        "First Mode\u01c0",  # dental click
        "First Mode\u0399",  # Greek capital iota
        "First Mode\u0269",  # Latin iota
        "\uff26\uff49\uff52\uff53\uff54 \uff2d\uff4f\uff44\uff45\uff4c",  # fullwidth
        "First Mode\u217c",  # roman numeral fifty (small)
        "First Mod\u0113l",  # e with macron
        "F\u0456rst Model",  # Cyrillic і
        "Fir\u200bst Model",  # zero-width space
        "First  Model ",
        "First Mo\u0501el",  # Cyrillic komi de
    ],
    "Toy Model": ["T\u043ey Model", "ToyModel", "toy-model", "T0y Model", "\u1d1boy Model", "Toy M\u1d0fdel"],
    "Pixel Lite": [
        "PIXEL LITE",
        "Pixe1 Lite",
        "P\u0131xel L\u0131te",
        "Pixel_Lite",
        "P\u026axel \u029fite",
        "Pixel Llte",
    ],
}
DISTINCT = [
    "First Model",
    "Second Model",
    "Toy Model",
    "Toy Model 2",
    "Pixel Lite",
    "Pixel Pro",
    "SD 1.5",
    "SD 2.1",
    "SDXL",
    "SD 3 Medium",
    "FLUX.1 dev",
    "FLUX.1 schnell",
    "Kandinsky 3",
    "PixArt Sigma",
    "PixArt Alpha",
    "Playground v2.5",
    "DALL-E 3",
    "Imagen 3",
    "Model A",
    "Model B",
    "Alice",
    "Alicia",
    "Stable Cascade",
    "Lumina Next",
    "Hunyuan DiT",
    "Sana 1.6B",
    "Sana 0.6B",
    "模型 A",
    "图像 A",
]


def test_lookalike_names_are_one_name_and_distinct_names_stay_distinct():
    count = 0
    for name, lookalikes in LOOKALIKES.items():
        for lookalike in lookalikes:
            assert lookalike != name and confusable_key(lookalike) == confusable_key(name), ascii(lookalike)
            count += 1
    assert count >= 30
    keys = [confusable_key(name) for name in DISTINCT]
    assert len(set(keys)) == len(DISTINCT) and all(keys)


def test_a_lookalike_of_a_model_name_is_refused_for_everyone(tmp_path):
    from leaderboard.store.sqlite_store import Entry, OwnershipError, model_key_of, name_conflict

    store = SQLiteStore(tmp_path / "lb.sqlite")
    store.add_submission(Entry(model_name="First Model", model_key="first_model", submitter="alice"))
    for lookalike in LOOKALIKES["First Model"]:
        key = model_key_of(clean(lookalike)) if any(c.isascii() and c.isalnum() for c in lookalike) else "x"
        for who in ("alice", "mallory"):
            problem = name_conflict(store.list_entries(), clean(lookalike), key, who)
            same_model = key == "first_model" and who == "alice"  # the owner's own model, resubmitted
            assert bool(problem) is not same_model, (ascii(lookalike), who, problem)
    with pytest.raises(OwnershipError, match="looks like the model 'First Model'"):
        store.add_submission(Entry(model_name="First Mode\u04cf", model_key="first_mode", submitter="mallory"))
    assert [e.model_name for e in store.list_entries()] == ["First Model"]


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
        resolve_revision=lambda repo, revision: "c" * 40,  # the Hub's commit of the revision (offline here)
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
    assert (entry.images_revision, entry.images_ref) == ("c" * 40, "main")  # pinned when stored
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
