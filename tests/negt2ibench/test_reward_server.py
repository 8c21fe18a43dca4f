"""`negt2ibench reward serve` with Flow-GRPO's own client (flow_grpo/rewards.py:160-229, transcribed in
`tests.helpers.reward_reference`): GenEval's reward on tiny random models through the real command, the
negation reward on the rectangle double through the same server, the JSON endpoint, hostile and
malformed bodies. Servers run on free ports and are waited on by state (`tests.helpers.reward_helpers`)."""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import requests
import torch
from PIL import Image

from dataset_builder.corpus import build_corpus
from evaluator.geneval.prompts import load_geneval_prompts
from negt2ibench.reward import OTHER_GROUP, RESPONSE_KEYS, Reward
from negt2ibench.reward_body import read_batch
from negt2ibench.reward_pickle import BadRequest, plain_loads
from tests.helpers import reward_reference
from tests.helpers.geneval_helpers import save_tiny_models
from tests.helpers.reward_helpers import REPO, documented_bound, double_reward_server, reward_server
from tests.helpers.space_helpers import RectanglePerception

CORPUS = {record.prompt_id: record for record in build_corpus()}
OFFLINE = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
GENEVAL = [dict(prompt.metadata) for prompt in load_geneval_prompts()]


def jpeg(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG")
    return buffer.getvalue()


class SystemCall:
    """A pickle that would run `touch PATH` when loaded by `pickle.loads`."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


# -- the body, without a server --------------------------------------------------------------------


def test_plain_types_load_and_anything_else_is_refused_before_it_is_built(tmp_path):
    body = {"images": [b"\xff\xd8"], "meta_datas": [{"tag": "colors", "include": [], "n": (1, 2.5, None)}]}
    assert plain_loads(pickle.dumps({**body, "only_strict": True})) == {**body, "only_strict": True}
    marker = tmp_path / "ran"
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(BadRequest, match=r"refused: the pickle names (posix|os)\.system"):
            plain_loads(pickle.dumps({"images": [SystemCall(marker)]}, protocol=protocol))
    assert not marker.exists()
    with pytest.raises(BadRequest, match="holds a set"):
        plain_loads(pickle.dumps({"images": {1, 2}}))
    with pytest.raises(BadRequest, match="not a pickle of plain types"):
        plain_loads(b"\x80\x05garbage")


@pytest.mark.parametrize(
    ("payload", "encoded", "message"),
    [
        ([1, 2], False, "must be a dict with images, meta_datas"),
        ({"images": "x", "meta_datas": []}, False, "must be lists"),
        ({"images": [], "meta_datas": [], "only_strict": "yes"}, False, "only_strict must be true or false"),
        ({"images": ["abc"], "meta_datas": [{}]}, False, r"images\[0\] must be the bytes"),
        ({"images": ["%%%"], "meta_datas": [{}]}, True, r"images\[0\] is not base64"),
    ],
)
def test_a_malformed_batch_is_one_line(payload, encoded, message):
    with pytest.raises(Exception, match=message):
        read_batch(payload, encoded=encoded)


def test_missing_weights_fail_in_one_line_before_any_worker(tmp_path, capsys):
    from negt2ibench.cli import main

    code = main(["reward", "serve", "--reward", "negation", "--weights-dir", str(tmp_path), "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: model weights for") and err.count("\n") == 1
    assert "download-models" in err


def test_every_missing_weight_of_both_rewards_is_named_in_one_line_before_torch_is_imported(tmp_path):
    # The default device (auto) counts the GPUs with torch: the weights are looked for before that.
    code = (
        "import sys; from negt2ibench.cli import main; "
        f"code = main(['reward', 'serve', '--reward', 'geneval', 'negation', '--weights-dir', {str(tmp_path)!r}]); "
        "print('exit', code, 'torch imported:', 'torch' in sys.modules)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, env=OFFLINE
    )
    assert completed.stdout.strip() == "exit 2 torch imported: False", completed.stderr
    err = completed.stderr
    assert err.startswith("error: model weights for") and err.count("\n") == 1
    for model in ("Mask2Former", "CLIP ViT-L/14", "RFDETRSegXLarge", "SAM 2.1", "SigLIP 2", "Depth-Anything V2"):
        assert model in err
    assert "download-models --preset geneval" in err and f"download-models --dir {tmp_path}" in err


# -- GenEval's reward: the real command on tiny models, Flow-GRPO's client unchanged ---------------------


def check_flow_grpos_client(geneval_server) -> None:
    client = reward_reference.geneval_score(geneval_server.url)
    torch.manual_seed(0)
    images = torch.rand(6, 3, 64, 64)  # Flow-GRPO's float NCHW in [0, 1]
    metadatas = [GENEVAL[i * 90] for i in range(6)]  # one prompt of each task
    scores, rewards, strict, group_rewards, group_strict = client(images, None, metadatas, False)
    assert len(scores) == len(rewards) == len(strict) == 6
    assert set(rewards) <= {0.0, 1.0} and set(strict) <= {0.0, 1.0} and all(s <= 1.0 for s in scores)
    assert list(group_strict) == reward_reference.REQUIRED_KEYS == list(group_rewards)
    for key, values in group_strict.items():  # an image's own task holds its value, every other -10
        assert len(values) == 6
        for metadata, value, own in zip(metadatas, values, strict, strict=True):
            assert value == (own if metadata["tag"] == key else OTHER_GROUP)
    _, only_strict_rewards, *_ = client(images[:5], None, metadatas[:5], True)
    assert only_strict_rewards == [0.0] * 5


def check_the_json_endpoint_answers_what_the_pickle_one_does(geneval_server) -> None:
    pictures = [Image.fromarray(np.full((48, 64, 3), 40 * i, np.uint8)) for i in range(3)]
    metadatas = GENEVAL[:3]
    body = {"images": [jpeg(p) for p in pictures], "meta_datas": metadatas, "only_strict": False}
    pickled = requests.post(f"{geneval_server.url}/", data=pickle.dumps(body), timeout=120)
    encoded = {**body, "images": [base64.b64encode(data).decode() for data in body["images"]]}
    as_json = requests.post(f"{geneval_server.url}/json", json=encoded, timeout=120)
    assert pickled.status_code == as_json.status_code == 200
    assert pickle.loads(pickled.content) == as_json.json()
    assert set(as_json.json()) == set(RESPONSE_KEYS)


def check_hostile_and_malformed_bodies_leave_the_server_up(geneval_server, tmp_path) -> None:
    marker = tmp_path / "ran"
    hostile = requests.post(f"{geneval_server.url}/", data=pickle.dumps(SystemCall(marker)), timeout=60)
    assert hostile.status_code == 400 and "refused: the pickle names" in hostile.text
    assert not marker.exists()
    bad_image = {"images": [b"not a jpeg"], "meta_datas": GENEVAL[:1], "only_strict": False}
    answer = requests.post(f"{geneval_server.url}/", data=pickle.dumps(bad_image), timeout=60)
    assert answer.status_code == 400 and answer.text.count("\n") == 1 and "images[0]" in answer.text
    good = jpeg(Image.new("RGB", (64, 48), (90, 120, 30)))
    bad_metadata = {"images": [good], "meta_datas": [{"tag": "colors", "include": "dog"}], "only_strict": False}
    answer = requests.post(f"{geneval_server.url}/", data=pickle.dumps(bad_metadata), timeout=60)
    assert answer.status_code == 400 and answer.text.count("\n") == 1 and "meta_datas[0]" in answer.text
    answer = requests.post(f"{geneval_server.url}/json", data=b"{not json", timeout=60)
    assert answer.status_code == 400 and "not JSON" in answer.json()["error"]
    ok = requests.post(f"{geneval_server.url}/", data=pickle.dumps({**bad_image, "images": [good]}), timeout=60)
    assert ok.status_code == 200 and len(pickle.loads(ok.content)["scores"]) == 1
    assert requests.get(f"{geneval_server.url}/health", timeout=60).json()["status"] == "ok"


@pytest.mark.slow
def test_reward_serve_on_tiny_models_with_flow_grpos_client_json_and_bad_bodies(tmp_path):
    """One server (the real command, two workers on the CPU) for the three checks: it starts once."""
    detector, clip = save_tiny_models(tmp_path / "tiny-geneval")
    arguments = ["--options", f"model={detector}", f"clip_model={clip}", "--device", "cpu", "--workers", "2"]
    with reward_server(arguments, workers=2) as server:
        check_flow_grpos_client(server)
        check_the_json_endpoint_answers_what_the_pickle_one_does(server)
        check_hostile_and_malformed_bodies_leave_the_server_up(server, tmp_path)


# -- the negation reward through the same server, on the rectangle double --------------------------------


@pytest.mark.slow
def test_flow_grpos_and_flow_factorys_clients_get_the_negation_reward_of_hand_counted_scenes():
    # A white car and a non-white computer mouse; the double finds both white on any picture that is not
    # flat: objects 2/2 + "white car" + not "non-white mouse" = 3/4. A blank (flat white) picture: 0.
    # 70 images: the client posts two batches of 35 (np.array_split) and merges their groups.
    color = CORPUS["color_pos1_neg1_000"].model_dump()
    gradient = np.linspace(0, 255, 96, dtype=np.uint8)[None, :, None].repeat(64, 0).repeat(3, 2)
    images = np.stack([gradient, np.full_like(gradient, 255)] * 35)  # uint8 NHWC, as the client makes them
    with double_reward_server(workers=2) as server:
        flow_grpo = reward_reference.geneval_score(server.url)
        scores, rewards, strict, _, group_strict = flow_grpo(images, None, [color] * 70, False)
        details = pickle.loads(
            requests.post(
                f"{server.url}/",
                data=pickle.dumps({"images": [jpeg(Image.fromarray(gradient))], "meta_datas": [color]}),
                timeout=60,
            ).content
        )["details"]
        # String metadata: the client's np.array_split makes numpy.str_ of each id and text.
        texts = ["color_pos1_neg1_000", color["prompt"]] * 2
        by_text = flow_grpo(images[:4], None, texts, False)
        check_flow_factorys_client(server.url, gradient)
        check_a_body_over_the_limit_is_a_413_over_http(server.url)
    assert scores == [0.75, 0.0] * 35 and strict == [0.0] * 70 == rewards
    assert group_strict["color"] == [0.0] * 70 and group_strict["depth"] == [OTHER_GROUP] * 70
    assert [s["cause"] for s in details[0]["statements"]] == [None, "forbidden_rendered"]
    assert json.dumps(details)  # what a training log keeps is plain JSON
    assert by_text[0] == [0.75, 0.0, 0.75, 0.0] and by_text[4]["color"] == [0.0] * 4


def check_flow_factorys_client(url: str, gradient: np.ndarray) -> None:
    """Flow-Factory's RemoteRewardClient (its request code, transcribed) gets what the reward gives in process."""
    client = reward_reference.RemoteRewardClient(url, timeout=60.0)
    assert client.health_check()
    prompts = ["color_pos1_neg1_000", CORPUS["depth_pos1_neg1_003"].prompt, CORPUS["color_pos0_neg2_000"].prompt]
    pictures = [Image.fromarray(gradient), Image.fromarray(np.full_like(gradient, 255)), Image.fromarray(gradient)]
    in_process = Reward(("negation",), negation_perception=RectanglePerception(), prompts=list(CORPUS.values()))
    expected = in_process(pictures, prompts)["scores"]
    assert client.compute(prompt=prompts, image=pictures) == expected
    assert expected[1] == 0.0 and 0.0 < expected[0] < 1.0  # a hand-counted reward, not a constant
    with pytest.raises(RuntimeError, match="400 Client Error"):  # no retry helps: it says so at once
        client.compute(prompt=["color_pos9_neg9_000"], image=pictures[:1])


def check_a_body_over_the_limit_is_a_413_over_http(url: str) -> None:
    limit, status = documented_bound("body")
    answer = requests.post(f"{url}/", data=b"\xff" * (limit + 1), timeout=60)
    assert answer.status_code == status == 413 and answer.text == "the body is over 64 MiB\n"
    assert requests.get(f"{url}/health", timeout=60).status_code == 200
