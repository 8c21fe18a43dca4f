"""`negt2ibench reward serve`: the reward over HTTP, a drop-in for yifan123/reward-server's GenEval server.

Flask under gunicorn, as reward-server (app_geneval.py, gunicorn.conf.py): one worker per visible GPU
(or `workers`), each with its own models (`negt2ibench.reward.Reward`, built in the worker after the
fork, on the GPU its slot gives it), behind one port. Routes:

- `POST /`: reward-server's protocol (app_geneval.py:21-57). The body is a pickle of
  `{"images": [JPEG bytes], "meta_datas": [metadata], "only_strict": bool}`, read by an unpickler that
  builds plain types only (dict, list, tuple, str, bytes, int, float, bool, None): a pickle naming
  anything else (a class, a function: what makes `pickle.loads` run code) is refused with 400 before
  anything is built. The answer is a pickle of `Reward`'s dict; an error, 500 with one line of text.
- `POST /json`: the same with images as base64 strings and JSON both ways (errors: `{"error": line}`).
- `GET /health`: 200 and what this worker serves, once its models are loaded.

The server binds to 127.0.0.1 unless told otherwise: a pickle endpoint is for the training job on
the same machine.
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from negt2ibench.core.errors import NegT2IError, UserError

if TYPE_CHECKING:
    from flask import Flask

    from negt2ibench.reward import Reward

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 18085  # reward-server's (gunicorn.conf.py:10): Flow-GRPO's client posts there unchanged
MAX_BODY_BYTES = 256 * 1024 * 1024
PLAIN_TYPES = (dict, list, tuple, str, bytes, int, float, bool, type(None))
_WORKER_SLOT: int | None = None  # this worker's slot (set after the fork)


class BadRequest(UserError):
    """A body refused before it is read (400): a pickle that names anything but plain types, not a
    pickle, not JSON."""


class PlainUnpickler(pickle.Unpickler):
    """An unpickler that builds plain types only: every global lookup, the way a pickle reaches a class
    or a callable (`find_class`: GLOBAL, STACK_GLOBAL, INST, OBJ and the extension registry all go
    through it), is refused, so no object's code runs. Persistent ids are refused by the base class."""

    def find_class(self, module: str, name: str) -> Any:
        raise BadRequest(f"refused: the pickle names {module}.{name}; only plain types are accepted")


def plain_loads(data: bytes) -> Any:
    """The object of a pickle of plain types, or `BadRequest` (nothing of the pickle's own runs)."""
    try:
        loaded = PlainUnpickler(io.BytesIO(data)).load()
    except BadRequest:
        raise
    except Exception as error:  # noqa: BLE001 - any malformed pickle is one refusal
        raise BadRequest(f"not a pickle of plain types ({type(error).__name__}: {_first_line(error)})") from None
    _check_plain(loaded)
    return loaded


def _check_plain(value: Any) -> None:
    stack = [value]
    while stack:  # iterative: a deeply nested body cannot exhaust the recursion limit
        item = stack.pop()
        if type(item) not in PLAIN_TYPES:  # exact types: a set or a bytearray is not in the protocol
            raise BadRequest(f"refused: the body holds a {type(item).__name__}; only plain types are accepted")
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def read_batch(payload: Any, *, encoded: bool) -> tuple[list[Any], list[Any], bool]:
    """(images, meta_datas, only_strict) of a request; images as bytes (decoded from base64 when
    `encoded`). A `UserError` (500, as reward-server answers a body it cannot read) names what is wrong."""
    if not isinstance(payload, dict) or "images" not in payload or "meta_datas" not in payload:
        raise UserError("the body must be a dict with images, meta_datas and only_strict")
    images, metadatas = payload["images"], payload["meta_datas"]
    only_strict = payload.get("only_strict", False)
    if not isinstance(images, (list, tuple)) or not isinstance(metadatas, (list, tuple)):
        raise UserError("images and meta_datas must be lists")
    if not isinstance(only_strict, bool):
        raise UserError(f"only_strict must be true or false, got {only_strict!r}")
    if encoded:
        decoded = []
        for index, text in enumerate(images):
            try:
                decoded.append(base64.b64decode(text, validate=True))
            except (TypeError, ValueError):
                raise UserError(f"images[{index}] is not base64 text") from None
        images = decoded
    for index, image in enumerate(images):
        if not isinstance(image, bytes):
            raise UserError(f"images[{index}] must be the bytes of an encoded image, got {type(image).__name__}")
    return list(images), list(metadatas), only_strict


def _first_line(error: BaseException) -> str:
    if isinstance(error, NegT2IError):
        return error.one_line()
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def create_app(reward: Reward) -> Flask:
    """The Flask app of one worker over its `Reward` (models already loaded)."""
    from flask import Flask, Response, request

    app = Flask("negt2ibench.reward_server")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES

    def failure(error: Exception, as_json: bool) -> Response:
        status = 400 if isinstance(error, BadRequest) else 500
        if not isinstance(error, NegT2IError):  # not ours: the worker's log keeps the traceback
            print(traceback.format_exc(), file=sys.stderr, flush=True)
        line = _first_line(error) if isinstance(error, NegT2IError) else f"{type(error).__name__}: {_first_line(error)}"
        if as_json:
            return Response(json.dumps({"error": line}), status, mimetype="application/json")
        return Response(line + "\n", status, mimetype="text/plain")

    def answer(as_json: bool) -> Response:
        try:
            body = request.get_data()
            if as_json:
                try:
                    payload = json.loads(body)
                except ValueError as error:
                    raise BadRequest(f"not JSON: {error}") from None
            else:
                payload = plain_loads(body)
            images, metadatas, only_strict = read_batch(payload, encoded=as_json)
            result = reward(images, metadatas, only_strict=only_strict)
        except Exception as error:  # noqa: BLE001 - every failure is one line and a status; the worker lives on
            return failure(error, as_json)
        if as_json:
            return Response(json.dumps(result), 200, mimetype="application/json")
        return Response(pickle.dumps(result), 200, mimetype="application/octet-stream")

    app.add_url_rule("/", "pickle", lambda: answer(False), methods=["POST"])
    app.add_url_rule("/json", "json", lambda: answer(True), methods=["POST"])

    @app.get("/health")
    def health() -> Response:
        status = {"status": "ok", "rewards": list(reward.kinds), "worker": _WORKER_SLOT, "pid": os.getpid()}
        return Response(json.dumps(status), 200, mimetype="application/json")

    @app.errorhandler(413)
    def too_large(_error: Exception) -> Response:
        return Response(f"the body is over {MAX_BODY_BYTES // 2**20} MiB\n", 413, mimetype="text/plain")

    return app


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES names them (none without CUDA)."""
    try:
        import torch
    except ImportError:
        return []
    count = torch.cuda.device_count()  # NVML's count: does not initialise CUDA, so the fork stays safe
    listed = [item.strip() for item in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if item.strip()]
    return listed[:count] if listed else [str(index) for index in range(count)]


def serve(
    build: Callable[[], Reward],
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    workers: int = 1,
    gpus: list[str] | None = None,
    timeout: int = 300,
) -> None:
    """Run gunicorn: `workers` processes, each calling BUILD once after the fork (with
    CUDA_VISIBLE_DEVICES set to its own GPU when `gpus` lists one per slot), behind HOST:PORT.
    Blocks until gunicorn stops (SIGINT or SIGTERM)."""
    from gunicorn.app.base import BaseApplication

    slots: dict[int, int] = {}  # slot -> worker pid, in the master

    def pre_fork(_server: Any, worker: Any) -> None:
        worker.reward_slot = next(slot for slot in range(workers) if slot not in slots)
        slots[worker.reward_slot] = -1

    def post_fork(_server: Any, worker: Any) -> None:
        global _WORKER_SLOT
        _WORKER_SLOT = worker.reward_slot
        if gpus:
            os.environ["CUDA_VISIBLE_DEVICES"] = gpus[worker.reward_slot]  # gunicorn.conf.py:18-20

    def post_worker_init(worker: Any) -> None:  # the app, and so the models, are loaded
        ready = f"negt2ibench reward worker ready: slot {worker.reward_slot}, pid {os.getpid()}"
        print(ready, file=sys.stderr, flush=True)

    def child_exit(_server: Any, worker: Any) -> None:
        slots.pop(getattr(worker, "reward_slot", -1), None)

    settings = {
        "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        "workers": workers,
        "worker_class": "gthread",  # a second thread answers /health while a batch runs
        "threads": 2,
        "timeout": timeout,
        "pre_fork": pre_fork,
        "post_fork": post_fork,
        "post_worker_init": post_worker_init,
        "child_exit": child_exit,
        "proc_name": "negt2ibench-reward",
        "control_socket_disable": True,  # gunicorn's ctl socket is one path per user: two servers would share it
    }

    class RewardApplication(BaseApplication):
        def load_config(self) -> None:
            for key, value in settings.items():
                self.cfg.set(key, value)

        def load(self) -> Flask:
            return create_app(build().load())

    RewardApplication().run()
