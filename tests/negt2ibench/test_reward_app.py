"""The reward server's app in process (`create_app` under Flask's test client, no port): every input error
is a 4xx with one line before any model runs, a fault of the models is a 500, the bounds are the numbers
docs/reward.md states (`documented_bound`), an image over them is refused from its header before it is
decoded, Flow-Factory's `/compute` reads GenEval's prompt texts, and `/health` and refusals are answered
while a slow batch holds the models."""

from __future__ import annotations

import base64
import io
import json
import pickle
import re
import threading

import numpy as np
import pytest
from PIL import Image, ImageFile

from dataset_builder.corpus import build_corpus
from evaluator.geneval.prompts import load_geneval_prompts
from evaluator.geneval.train_prompts import geneval_train_prompts
from negt2ibench.reward import Reward
from negt2ibench.reward_server import create_app
from tests.helpers import reward_reference
from tests.helpers.geneval_helpers import ScriptedGenEvalPerception, random_geneval_scene
from tests.helpers.reward_helpers import documented_bound
from tests.helpers.space_helpers import RectanglePerception

CORPUS = build_corpus()
COLOR = "color_pos1_neg1_000"  # a white car and a non-white computer mouse: 3/4 on a scene, 0 on a blank
GRADIENT = np.linspace(0, 255, 96, dtype=np.uint8)[None, :, None].repeat(64, 0).repeat(3, 2)


def encoded(pixels: np.ndarray = GRADIENT, format: str = "JPEG") -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=format)
    return buffer.getvalue()


def jpeg_claiming(width: int, height: int) -> bytes:
    """A small JPEG whose header (SOF0) says WIDTH × HEIGHT: its size is read, its pixels never are."""
    data = bytearray(encoded())
    start = data.index(b"\xff\xc0") + 5  # marker, length (2), precision (1), then height and width
    data[start : start + 4] = height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return bytes(data)


def client_of(perception=None, kinds=("negation",), geneval=None):
    reward = Reward(
        kinds, negation_perception=perception or RectanglePerception(), geneval_perception=geneval, prompts=CORPUS
    )
    return create_app(reward).test_client()


def post_pickle(client, images, metadatas, **extra):
    return client.post("/", data=pickle.dumps({"images": images, "meta_datas": metadatas, **extra}))


def one_line(response) -> str:
    if response.is_json:
        line = response.get_json()["error"]
        assert "\n" not in line
        return line
    text = response.get_data(as_text=True)
    assert text.endswith("\n") and text.count("\n") == 1, text
    return text


# -- every input error is a 4xx, before any model runs -----------------------------------------------


INPUT_ERRORS = [
    ("/", b"not a pickle", 400, "not a pickle"),
    ("/", pickle.dumps([1, 2]), 400, "must be a dict with images"),
    ("/", pickle.dumps({"images": "x", "meta_datas": []}), 400, "must be lists"),
    ("/", pickle.dumps({"images": [], "meta_datas": [], "only_strict": "yes"}), 400, "only_strict"),
    ("/", pickle.dumps({"images": [b"not an image"], "meta_datas": [COLOR]}), 400, r"images\[0\] is not a recognised"),
    ("/", pickle.dumps({"images": [encoded()], "meta_datas": ["color_pos9_neg9_000"]}), 400, "unknown prompt id"),
    ("/", pickle.dumps({"images": [encoded()], "meta_datas": ["a photo of a car, which is"]}), 400, "cannot parse"),
    ("/", pickle.dumps({"images": [encoded()], "meta_datas": [42]}), 400, r"meta_datas\[0\] must be"),
    ("/", pickle.dumps({"images": [encoded()] * 2, "meta_datas": [COLOR]}), 400, "2 images but 1 metadata"),
    ("/", pickle.dumps({"images": [encoded()], "meta_datas": [{"tag": "colors", "include": []}]}), 400, "GenEval"),
    ("/json", b"{not json", 400, "not JSON"),
    ("/json", json.dumps({"images": ["%%%"], "meta_datas": [COLOR]}).encode(), 400, "not base64"),
    ("/compute", json.dumps({"prompt": [COLOR], "image": None, "video": [["x"]]}).encode(), 400, "images only"),
    ("/compute", json.dumps({"prompt": [COLOR, COLOR], "image": ["aGk="]}).encode(), 400, "1 images but 2 prompts"),
    ("/compute", json.dumps({"image": []}).encode(), 400, '"prompt"'),
    ("/compute", json.dumps({"prompt": [3], "image": [base64.b64encode(encoded()).decode()]}).encode(), 400, "text"),
]


@pytest.mark.parametrize(("route", "body", "status", "message"), INPUT_ERRORS, ids=[e[3] for e in INPUT_ERRORS])
def test_every_input_error_is_a_4xx_line_and_no_model_runs(route, body, status, message):
    double = RectanglePerception()
    answer = client_of(double).post(route, data=body, content_type="application/octet-stream")
    assert answer.status_code == status
    assert re.search(message, one_line(answer))
    assert double.calls == 0


def test_geneval_metadata_a_geneval_reward_cannot_read_is_a_400():
    client = client_of(kinds=("geneval",), geneval=ScriptedGenEvalPerception([]))
    answer = post_pickle(client, [encoded()], [{"tag": "colors", "include": "dog"}])
    assert answer.status_code == 400 and r"meta_datas[0] is not GenEval metadata" in one_line(answer)


class FailingPerception(RectanglePerception):
    """A model that fails (as CUDA out of memory would) on every batch."""

    def observe(self, images, prompts):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")


class FailingGenEval:
    def observe(self, images, prompts):
        raise MemoryError("no memory for the detector")


def test_a_fault_of_the_models_is_a_500_line_and_the_worker_goes_on(capsys):
    # The negation engine isolates the failing image into an error row: never a score, the batch fails.
    client = client_of(FailingPerception())
    answer = post_pickle(client, [encoded()], [COLOR])
    assert answer.status_code == 500 and "images[0] could not be scored" in one_line(answer)
    assert "CUDA out of memory" in one_line(answer)
    geneval = client_of(kinds=("geneval",), geneval=FailingGenEval())
    metadata = dict(load_geneval_prompts()[0].metadata)
    answer = geneval.post("/json", json={"images": [base64.b64encode(encoded()).decode()], "meta_datas": [metadata]})
    assert answer.status_code == 500 and answer.get_json()["error"] == "MemoryError: no memory for the detector"
    assert "Traceback" in capsys.readouterr().err  # not ours: the worker's log keeps the traceback
    assert geneval.get("/health").status_code == 200


# -- the documented bounds ------------------------------------------------------------------------------


def test_a_body_over_the_documented_limit_is_a_413_and_one_at_it_is_read(capsys):
    limit, status = documented_bound("body")
    client = client_of()
    over = client.post("/", data=b"\xff" * (limit + 1), content_type="application/octet-stream")
    assert over.status_code == status == 413 and "the body is over 64 MiB" in one_line(over)
    at = client.post("/", data=b"\xff" * limit, content_type="application/octet-stream")
    assert at.status_code == 400 and "not a pickle" in one_line(at)  # read, and refused for what it is
    assert "negt2ibench reward: 413 POST /: the body is over" in capsys.readouterr().err


def test_more_images_than_documented_are_a_413():
    count, status = documented_bound("images")
    double = RectanglePerception()
    answer = post_pickle(client_of(double), [b"x"] * (count + 1), [COLOR] * (count + 1))
    assert answer.status_code == status and f"at most {count}" in one_line(answer)
    answer = client_of(double).post("/compute", json={"prompt": [COLOR] * (count + 1), "image": ["aGk="] * (count + 1)})
    assert answer.status_code == status and double.calls == 0


def test_a_40_megapixel_image_is_refused_from_its_header_before_any_pixel_is_decoded(monkeypatch):
    pixels, status = documented_bound("one image, pixels")
    decoded = []
    original_load = ImageFile.ImageFile.load
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: decoded.append(self.size) or original_load(self))
    double = RectanglePerception()
    client = client_of(double)
    answer = post_pickle(client, [encoded(), jpeg_claiming(8000, 5000)], [COLOR, COLOR])
    assert answer.status_code == status == 413 and "images[1] is 8000x5000 px = 40.0 MP" in one_line(answer)
    assert decoded == [] and double.calls == 0
    side = int(pixels**0.5)  # the documented bound itself is accepted: 2048 × 2048
    assert post_pickle(client, [jpeg_claiming(side, side)], [COLOR]).status_code != 413
    assert post_pickle(client, [jpeg_claiming(side, side + 1)], [COLOR]).status_code == 413


def test_an_image_over_the_documented_bytes_and_a_request_over_the_documented_pixels_are_413s():
    image_bytes, _ = documented_bound("one image, encoded")
    request_pixels, status = documented_bound("all images")
    image_pixels, _ = documented_bound("one image, pixels")
    client = client_of()
    answer = post_pickle(client, [encoded() + b"\0" * (image_bytes - len(encoded()) + 1)], [COLOR])
    assert answer.status_code == status and "images[0] is 16.0 MiB" in one_line(answer)
    side = int(image_pixels**0.5)
    fits = request_pixels // image_pixels  # 16 images of 2048 × 2048 hold exactly the documented pixels
    answer = post_pickle(client, [jpeg_claiming(side, side)] * (fits + 1), [COLOR] * (fits + 1))
    assert answer.status_code == status and "in all; at most 67.1 MP" in one_line(answer)
    assert side * side * fits == request_pixels  # on the bound itself: not refused for its pixels
    answer = post_pickle(client, [jpeg_claiming(side, side)] * fits, [COLOR] * fits)
    assert answer.status_code != status  # read on (its headers claim pictures its bytes do not hold)


def test_a_base64_image_over_the_documented_bytes_is_refused_before_it_is_decoded(monkeypatch):
    # base64 writes 3 bytes as 4 characters: an image of exactly the bound (16 MiB = 3 x 5,592,405 + 1
    # bytes) is 4 x 5,592,406 characters, 3 bytes more is 4 x 5,592,407; the second is refused from its
    # length alone, never decoded (a decoded one would be refused later, as "is 16.0 MiB")
    image_bytes, status = documented_bound("one image, encoded")
    decoded: list[int] = []
    original = base64.b64decode
    monkeypatch.setattr(base64, "b64decode", lambda text, **kw: decoded.append(len(text)) or original(text, **kw))
    client = client_of()
    over = base64.b64encode(b"\0" * (image_bytes + 3)).decode()
    assert len(over) == 4 * 5_592_407
    answer = client.post("/compute", json={"prompt": [COLOR], "image": [over]})
    assert answer.status_code == status and one_line(answer).endswith("image[0] is over 16 MiB")
    assert decoded == []
    at_bound = base64.b64encode(b"\0" * image_bytes).decode()
    assert len(at_bound) == 4 * 5_592_406
    answer = client.post("/compute", json={"prompt": [COLOR], "image": [at_bound]})
    assert decoded == [len(at_bound)]  # read past the length check: decoded, then judged as an image
    assert "is over 16 MiB" not in one_line(answer)


# -- Flow-Factory's /compute: texts, GenEval's texts, metadata ------------------------------------------


def test_compute_answers_each_images_score_for_texts_ids_and_metadata():
    client = client_of()
    image = base64.b64encode(encoded(format="PNG")).decode()
    blank = base64.b64encode(encoded(np.full_like(GRADIENT, 255), "PNG")).decode()
    color = next(record for record in CORPUS if record.prompt_id == COLOR)
    prompts = [color.prompt, COLOR, color.model_dump(), color.prompt]
    answer = client.post("/compute", json={"prompt": prompts, "image": [image, image, image, blank], "video": None})
    assert answer.status_code == 200 and answer.get_json() == {"rewards": [0.75, 0.75, 0.75, 0.0]}


def test_compute_looks_geneval_prompt_texts_up_to_their_metadata():
    rng = np.random.default_rng(5)
    metadatas = [dict(load_geneval_prompts()[100].metadata), geneval_train_prompts()[7]]  # a test and a train prompt
    scenes = [random_geneval_scene(rng, metadata) for metadata in metadatas]
    client = client_of(kinds=("geneval",), geneval=ScriptedGenEvalPerception([scene[0] for scene in scenes]))
    image = base64.b64encode(encoded(format="PNG")).decode()
    answer = client.post("/compute", json={"prompt": [m["prompt"] for m in metadatas], "image": [image, image]})
    expected, *_ = reward_reference.compute_geneval(
        [(metadata, arrays, colour_of) for metadata, (_, arrays, colour_of) in zip(metadatas, scenes, strict=True)]
    )
    assert answer.status_code == 200 and answer.get_json() == {"rewards": expected}
    answer = client.post("/compute", json={"prompt": ["a photo of a red cup and a non-blue bowl"], "image": [image]})
    assert answer.status_code == 400 and "not one of GenEval's prompts" in one_line(answer)


# -- one slow batch holds the models, not the worker -----------------------------------------------------


class BlockingPerception(RectanglePerception):
    """The double, holding each batch until the test releases it."""

    def __init__(self):
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def observe(self, images, prompts):
        self.entered.set()
        assert self.release.wait(timeout=120), "the test never released the batch"
        return super().observe(images, prompts)


def in_thread(call):
    """CALL run in a thread; its (thread, results list)."""
    results: list = []
    thread = threading.Thread(target=lambda: results.append(call()), daemon=True)
    thread.start()
    return thread, results


def test_health_and_refusals_are_answered_while_a_slow_batch_holds_the_models():
    double = BlockingPerception()
    reward = Reward(("negation",), negation_perception=double, prompts=CORPUS)
    app = create_app(reward)
    body = pickle.dumps({"images": [encoded()], "meta_datas": [COLOR]})
    slow, slow_answer = in_thread(lambda: app.test_client().post("/", data=body))
    assert double.entered.wait(timeout=120)  # the slow batch holds the models now
    health, health_answer = in_thread(lambda: app.test_client().get("/health"))
    refused, refused_answer = in_thread(lambda: app.test_client().post("/", data=b"not a pickle"))
    for thread in (health, refused):
        thread.join(timeout=60)  # a failure bound only: they are answered at once
    assert not double.release.is_set() and slow.is_alive()
    assert [a.status_code for a in health_answer + refused_answer] == [200, 400]
    double.release.set()
    slow.join(timeout=120)
    assert slow_answer[0].status_code == 200 and pickle.loads(slow_answer[0].data)["scores"] == [0.75]
