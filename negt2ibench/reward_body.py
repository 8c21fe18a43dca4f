"""The batches of the reward server's three protocols, read and bounded before any model runs.

- reward-server's (`POST /`, Flow-GRPO's client): a pickle of `{"images": [JPEG bytes], "meta_datas":
  [...], "only_strict": bool}` (`pickle_batch`), read by `negt2ibench.reward_pickle`;
- the same as JSON with base64 images (`POST /json`, `json_batch`);
- Flow-Factory's (`POST /compute`, its `RemoteRewardClient`): `{"prompt": [...], "image": [base64 PNG],
  "video": null, ...}` (`compute_batch`), each prompt a text (a NegT2IBench prompt id or text in the
  grammar, or one of GenEval's prompt texts) or a metadata dict.

Then `check_images` reads each image's header (no pixel is decoded) against `RequestBounds`. Every
refusal is a `BadRequest` (400) or a `TooLarge` (413) with one line.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from .reward import GENEVAL, NEGATION
from .reward_pickle import DEFAULT_BOUNDS, BadRequest, RequestBounds, TooLarge, plain_loads, plain_value

FLOW_FACTORY_MEDIA = ("video", "condition_images", "condition_videos")  # my_reward_remote.py's other fields


@dataclass(frozen=True)
class Batch:
    """One request's images (encoded bytes), their metadata and reward-server's `only_strict`."""

    images: list[bytes]
    metadatas: list[Any]
    only_strict: bool = False


def pickle_batch(body: bytes, bounds: RequestBounds = DEFAULT_BOUNDS) -> Batch:
    """reward-server's body: a pickle of plain types.

    Args:
        body: the request's body.
        bounds: what it may hold.

    Returns:
        The batch.

    Raises:
        BadRequest: a body that is not such a pickle (400), naming what is wrong.
        TooLarge: a body over a bound (413).
    """
    return Batch(*read_batch(plain_loads(body, bounds), encoded=False, bounds=bounds))


def json_batch(body: bytes, bounds: RequestBounds = DEFAULT_BOUNDS) -> Batch:
    """`POST /json`'s body: reward-server's keys as JSON, the images base64 text.

    Args:
        body: the request's body.
        bounds: what it may hold.

    Returns:
        The batch.

    Raises:
        BadRequest: not JSON, or not the protocol's keys and types (400).
        TooLarge: a body over a bound (413).
    """
    return Batch(*read_batch(json_value(body, bounds), encoded=True, bounds=bounds))


def compute_batch(body: bytes, kinds: Collection[str], bounds: RequestBounds = DEFAULT_BOUNDS) -> Batch:
    """Flow-Factory's body (`RemoteRewardClient.compute`): prompts and base64 images.

    Args:
        body: the request's body.
        kinds: the rewards the server scores (`geneval`, `negation`): a text is GenEval's when GenEval's
            reward is served and the text is one of its prompts, NegT2IBench's otherwise.
        bounds: what it may hold.

    Returns:
        The batch, one metadata per image.

    Raises:
        BadRequest: not Flow-Factory's keys, a video, a prompt that is neither text nor metadata (400).
        TooLarge: a body over a bound (413).
    """
    payload = json_value(body, bounds)
    if not isinstance(payload, dict) or not isinstance(payload.get("prompt"), list):
        raise BadRequest('the body must be a JSON object with "prompt" (a list) and "image" (base64 images)')
    given = [key for key in FLOW_FACTORY_MEDIA if payload.get(key)]
    if given:
        raise BadRequest(f"this reward scores images only; the body also holds {', '.join(given)}")
    images = _decoded(payload.get("image") or [], "image", bounds)
    prompts = payload["prompt"]
    if len(prompts) != len(images):
        raise BadRequest(f"{len(images)} images but {len(prompts)} prompts: give one prompt per image")
    return Batch(images, [metadata_of_prompt(prompt, index, kinds) for index, prompt in enumerate(prompts)])


def metadata_of_prompt(prompt: Any, index: int, kinds: Collection[str]) -> Any:
    """The metadata a Flow-Factory prompt stands for.

    Args:
        prompt: a text or a metadata dict.
        index: its place in the batch, for the error.
        kinds: the rewards served.

    Returns:
        GenEval's metadata for one of its prompt texts (when GenEval's reward is served), else the prompt
        as given (a NegT2IBench id or text, or a metadata dict, read by `Reward`).

    Raises:
        BadRequest: neither a text nor a dict, or a text no served reward reads.
    """
    if isinstance(prompt, dict):
        return prompt
    if not isinstance(prompt, str):
        raise BadRequest(f"prompt[{index}] must be a text or a metadata object, got {type(prompt).__name__}")
    if GENEVAL in kinds:
        metadata = geneval_metadata_by_text().get(prompt.strip())
        if metadata is not None:
            return metadata
    if NEGATION in kinds:
        return prompt
    raise BadRequest(f"prompt[{index}] is not one of GenEval's prompts (this server scores geneval only): {prompt!r}")


@cache
def geneval_metadata_by_text() -> dict[str, dict[str, Any]]:
    """GenEval's metadata by prompt text, for clients that send a prompt's text only (Flow-Factory).

    Returns:
        Its 553 test prompts' and this project's 2,160 training prompts' metadata, by text.
    """
    from evaluator.geneval.prompts import load_geneval_prompts
    from evaluator.geneval.train_prompts import geneval_train_prompts

    metadatas = [dict(prompt.metadata) for prompt in load_geneval_prompts()] + geneval_train_prompts()
    return {metadata["prompt"]: metadata for metadata in metadatas}


def json_value(body: bytes, bounds: RequestBounds = DEFAULT_BOUNDS) -> Any:
    """A JSON body as plain values, its size bounded before it is parsed.

    Args:
        body: the body.
        bounds: what it may hold.

    Returns:
        The value.

    Raises:
        BadRequest: not JSON, or nested deeper than `bounds.depth` (400).
        TooLarge: more than `bounds.elements` values (413).
    """
    values = body.count(b",") + body.count(b"[") + body.count(b"{") + 1  # at least the values it holds
    if values > bounds.elements:
        raise TooLarge(f"the JSON body holds over {bounds.elements:,} values; split the batch")
    try:
        value = json.loads(body)
    except Exception as error:  # noqa: BLE001 - bad UTF-8, bad JSON, nesting past the parser's limit
        raise BadRequest(f"not JSON: {error}") from None
    return plain_value(value, bounds)


def read_batch(
    payload: Any, *, encoded: bool, bounds: RequestBounds = DEFAULT_BOUNDS
) -> tuple[list[bytes], list[Any], bool]:
    """(images, meta_datas, only_strict) of reward-server's payload.

    Args:
        payload: the body's value.
        encoded: whether images are base64 text (`/json`) rather than bytes.
        bounds: the image count and sizes.

    Returns:
        The images as bytes, the metadata, `only_strict`.

    Raises:
        BadRequest: a payload without the protocol's keys or types, naming what is wrong (400).
        TooLarge: more images, or a larger one, than the bounds allow (413).
    """
    if not isinstance(payload, dict) or "images" not in payload or "meta_datas" not in payload:
        raise BadRequest("the body must be a dict with images, meta_datas and only_strict")
    images, metadatas = payload["images"], payload["meta_datas"]
    only_strict = payload.get("only_strict", False)
    if not isinstance(images, (list, tuple)) or not isinstance(metadatas, (list, tuple)):
        raise BadRequest("images and meta_datas must be lists")
    if not isinstance(only_strict, bool):
        raise BadRequest(f"only_strict must be true or false, got {only_strict!r}")
    if encoded:
        images = _decoded(images, "images", bounds)
    _check_count(images, bounds)
    if len(images) != len(metadatas):  # before any metadata is read
        raise BadRequest(f"{len(images)} images but {len(metadatas)} metadata: give one per image")
    for index, image in enumerate(images):
        if not isinstance(image, bytes):
            raise BadRequest(f"images[{index}] must be the bytes of an encoded image, got {type(image).__name__}")
    return list(images), list(metadatas), only_strict


def _check_count(images: Sequence[Any], bounds: RequestBounds) -> None:
    if len(images) > bounds.images:
        raise TooLarge(f"{len(images)} images in one request; at most {bounds.images}: split the batch")


def _decoded(texts: Any, key: str, bounds: RequestBounds) -> list[bytes]:
    if not isinstance(texts, (list, tuple)):
        raise BadRequest(f"{key} must be a list of base64 images")
    _check_count(texts, bounds)
    images = []
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise BadRequest(f"{key}[{index}] is not base64 text")
        if len(text) > 4 * -(-bounds.image_bytes // 3):  # before decoding: base64 writes 3 bytes as 4 characters
            raise TooLarge(f"{key}[{index}] is over {bounds.image_bytes // 2**20} MiB")
        try:
            images.append(base64.b64decode(text, validate=True))
        except (binascii.Error, ValueError):
            raise BadRequest(f"{key}[{index}] is not base64 text") from None
    return images


def check_images(images: Sequence[bytes], bounds: RequestBounds = DEFAULT_BOUNDS) -> None:
    """Each image's size from its header against the bounds; no pixel is decoded.

    Args:
        images: the encoded images.
        bounds: the count, bytes and pixels allowed.

    Raises:
        TooLarge: too many images, an image over the bytes or pixels of one, or more pixels in all
            than a request may hold (413).
        BadRequest: bytes that are not an image (400).
    """
    from PIL import Image, UnidentifiedImageError

    _check_count(images, bounds)
    total = 0
    for index, data in enumerate(images):
        if len(data) > bounds.image_bytes:
            raise TooLarge(f"images[{index}] is {len(data) / 2**20:.1f} MiB; at most {bounds.image_bytes // 2**20} MiB")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                width, height = Image.open(io.BytesIO(data)).size  # the header only
        except Image.DecompressionBombError:
            raise TooLarge(f"images[{index}] is over {bounds.image_pixels:,} pixels") from None
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
            raise BadRequest(f"images[{index}] is not a recognised image (corrupt or not an image)") from None
        if width * height > bounds.image_pixels:
            raise TooLarge(
                f"images[{index}] is {width}x{height} px = {width * height / 1e6:.1f} MP; "
                f"at most {bounds.image_pixels / 1e6:.1f} MP"
            )
        total += width * height
    if total > bounds.request_pixels:
        raise TooLarge(f"the images hold {total / 1e6:.1f} MP in all; at most {bounds.request_pixels / 1e6:.1f} MP")
