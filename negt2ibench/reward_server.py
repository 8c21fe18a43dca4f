"""`negt2ibench reward serve`: the reward over HTTP, a drop-in for yifan123/reward-server's GenEval server
and a reward server for Flow-Factory.

Flask under gunicorn, as reward-server (app_geneval.py, gunicorn.conf.py): one worker per visible GPU
(or `workers`), each with its own models (`negt2ibench.reward.Reward`, built in the worker after the
fork, on the GPU its slot gives it), behind one port. Routes:

- `POST /`: reward-server's protocol (app_geneval.py:21-57): a pickle of `{"images": [JPEG bytes],
  "meta_datas": [metadata], "only_strict": bool}` read as plain types (`negt2ibench.reward_pickle`),
  answered by a pickle of `Reward`'s dict;
- `POST /json`: the same with images as base64 strings and JSON both ways;
- `POST /compute`: Flow-Factory's `RemoteRewardClient` (`{"prompt": [...], "image": [base64]}`), answered
  `{"rewards": [...]}`, each image's score;
- `GET /health`: 200 and what this worker serves, once its models are loaded; never waits for them.

Every request is bounded before a model runs (`RequestBounds`: the body, the number of images, each
one's bytes and pixels read from its header, the pixels of all). A failure is one line: 413 for a body
over a bound, 400 for anything else the client sent wrong (a refused pickle, bad metadata, an image that
is not one), 500 for a fault of the server (out of memory, a model error), where a retry can help. Each
worker runs `THREADS` requests at once: the models take one batch at a time, so a request waits for them
only once it is read and checked, and `/health` and refusals never wait.

The server binds to 127.0.0.1 unless told otherwise: a pickle endpoint is for the training job on
the same machine.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from negt2ibench.core.errors import NegT2IError

if TYPE_CHECKING:  # the reward and its readers are imported by the handlers: `reward --help` stays light
    from flask import Flask, Response

    from negt2ibench.reward import Reward
    from negt2ibench.reward_body import Batch
    from negt2ibench.reward_pickle import RequestBounds

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 18085  # reward-server's (gunicorn.conf.py:10): Flow-GRPO's client posts there unchanged
THREADS = 4  # per worker: the models take one batch at a time; the others wait read, checked and small
_WORKER_SLOT: int | None = None  # this worker's slot (set after the fork)


def status_of(error: BaseException) -> int:
    """The HTTP status of a failure: 413 over a bound, 400 for what the client sent wrong, else 500.

    Args:
        error: what the request raised.

    Returns:
        413, 400 or 500.
    """
    from negt2ibench.reward import RewardInputError
    from negt2ibench.reward_pickle import TooLarge

    if isinstance(error, TooLarge):
        return 413
    return 400 if isinstance(error, RewardInputError) else 500


def _line(error: BaseException) -> str:
    if isinstance(error, NegT2IError):
        return error.one_line()
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else 'no message'}"


def create_app(reward: Reward, bounds: RequestBounds | None = None) -> Flask:
    """The Flask app of one worker over its `Reward` (models already loaded).

    Args:
        reward: the worker's reward.
        bounds: what a request may hold (default: `RequestBounds()`, the numbers docs/reward.md states).

    Returns:
        The app: `/`, `/json`, `/compute` and `/health`.
    """
    from flask import Flask, Response

    from negt2ibench.reward_body import compute_batch, json_batch, pickle_batch
    from negt2ibench.reward_pickle import RequestBounds

    bounds = bounds or RequestBounds()
    app = Flask("negt2ibench.reward_server")
    app.config["MAX_CONTENT_LENGTH"] = bounds.body_bytes
    routes = {  # path: (how its body is read, how a result is answered, whether errors are JSON)
        "/": (lambda data: pickle_batch(data, bounds), _pickled, False),
        "/json": (lambda data: json_batch(data, bounds), _as_json, True),
        "/compute": (lambda data: compute_batch(data, reward.kinds, bounds), _rewards_only, True),
    }
    for path, (read, respond, as_json) in routes.items():
        view = _route(reward, bounds, read, respond, as_json)
        app.add_url_rule(path, path.strip("/") or "pickle", view, methods=["POST"])

    @app.get("/health")
    def health() -> Response:  # never waits for the models: no lock is taken here
        status = {"status": "ok", "rewards": list(reward.kinds), "worker": _WORKER_SLOT, "pid": os.getpid()}
        return Response(json.dumps(status), 200, mimetype="application/json")

    @app.errorhandler(413)
    def too_large(_error: Exception) -> Response:
        return Response(f"the body is over {bounds.body_bytes // 2**20} MiB\n", 413, mimetype="text/plain")

    return app


def _route(
    reward: Reward,
    bounds: RequestBounds,
    read: Callable[[bytes], Batch],
    respond: Callable[[dict[str, Any]], Response],
    as_json: bool,
) -> Callable[[], Response]:
    """A POST route: the body read and checked (a 4xx before any model), then the reward, then RESPOND."""
    from flask import request
    from werkzeug.exceptions import RequestEntityTooLarge

    from negt2ibench.reward_body import check_images
    from negt2ibench.reward_pickle import TooLarge

    def body() -> bytes:
        try:
            return request.get_data(cache=False)
        except RequestEntityTooLarge:  # read here, inside the handler: a 413 of ours, not a 500
            raise TooLarge(f"the body is over {bounds.body_bytes // 2**20} MiB") from None

    def answer() -> Response:
        try:
            batch = read(body())  # the body is freed once read: a request waiting for the models holds its images
            check_images(batch.images, bounds)
            result = reward(batch.images, batch.metadatas, only_strict=batch.only_strict)
        except Exception as error:  # noqa: BLE001 - every failure is one line and a status; the worker lives on
            return _failure(error, as_json)
        return respond(result)

    return answer


def _failure(error: Exception, as_json: bool) -> Response:
    """One line and its status; logged with the request, and with the traceback when not ours."""
    from flask import Response, request

    status, line = status_of(error), _line(error)
    if status == 500 and not isinstance(error, NegT2IError):  # not ours: the worker's log keeps the traceback
        print(traceback.format_exc(), file=sys.stderr, flush=True)
    print(f"negt2ibench reward: {status} {request.method} {request.path}: {line}", file=sys.stderr, flush=True)
    if as_json:
        return Response(json.dumps({"error": line}), status, mimetype="application/json")
    return Response(line + "\n", status, mimetype="text/plain")


def _pickled(result: dict[str, Any]) -> Response:
    from flask import Response

    return Response(pickle.dumps(result), 200, mimetype="application/octet-stream")


def _as_json(result: dict[str, Any]) -> Response:
    from flask import Response

    return Response(json.dumps(result), 200, mimetype="application/json")


def _rewards_only(result: dict[str, Any]) -> Response:  # Flow-Factory reads "rewards" (and "error")
    from flask import Response

    return Response(json.dumps({"rewards": result["scores"]}), 200, mimetype="application/json")


def _worker_app(build: Callable[[], Reward]) -> Flask:
    """A worker's app: its reward built and loaded (after the fork), GenEval's texts looked up once."""
    from negt2ibench.reward import GENEVAL
    from negt2ibench.reward_body import geneval_metadata_by_text

    reward = build().load()
    if GENEVAL in reward.kinds:
        geneval_metadata_by_text()  # for Flow-Factory's texts: now, not in the first request
    return create_app(reward)


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
        "threads": THREADS,
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
            return _worker_app(build)

    RewardApplication().run()
