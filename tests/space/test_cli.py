"""`negt2ibench deploy-space` and `negt2ibench serve` (argument handling; no network)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from negt2ibench.cli import main
from negt2ibench.core.errors import UserError
from space.deploy import assemble_space, deploy_space, space_requirements
from tests.helpers.gradio_values import shown as update_value
from tests.helpers.hub_helpers import RecordingHfApi, http_error
from tests.helpers.net import free_port, local_client, served_launch_settings, space_launch_settings

REPO = Path(__file__).resolve().parents[2]


def test_deploy_dry_run_lists_the_space_folder(tmp_path, capsys):
    out = tmp_path / "space_folder"
    assert main(["deploy-space", "--repo-id", "org/negt2ibench", "--dry-run", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert "app.py" in printed and "README.md" in printed and "requirements.txt" in printed
    assert "space/app.py" in printed and "evaluator/pipeline.py" in printed
    assert printed[-2].startswith("dry run:") and "nothing uploaded" in printed[-2]
    assert printed[-1] == (
        "hardware: pick ZeroGPU under 'Space hardware' on https://huggingface.co/spaces/org/negt2ibench/settings "
        "(or deploy again with --hardware zero-a10g)"
    )
    assert not any("__pycache__" in line for line in printed)
    front_matter = (out / "README.md").read_text().split("---")[1]
    meta = yaml.safe_load(front_matter)
    assert (meta["sdk"], meta["sdk_version"], meta["app_file"]) == ("gradio", "6.31.0", "app.py")
    assert "suggested_hardware" not in meta  # ZeroGPU is none of its valid flavours
    assert meta["hf_oauth"] is True  # "Sign in with Hugging Face" for per-account submission limits
    assert "from space.app import" in (out / "app.py").read_text()


def test_space_requirements_drop_test_tools_and_gradio():
    names = [line.split("==")[0] for line in space_requirements().splitlines()]
    assert "spaces" in names and "torch" in names and "transformers" in names
    assert not {"gradio", "pytest", "playwright", "gradio_client"} & set(names)


def test_deploy_uploads_through_the_given_function(tmp_path):
    calls = []
    files, url = deploy_space(
        "org/name", tmp_path / "f", upload=lambda folder, repo: calls.append((folder, repo)) or "URL"
    )
    assert url == "URL" and calls == [(tmp_path / "f", "org/name")]
    assert Path("app.py") in files


def test_deploy_requests_zerogpu_and_says_what_to_click_when_refused(tmp_path):
    api = RecordingHfApi()
    files, url = deploy_space(
        "org/name", tmp_path / "f", upload=lambda folder, repo: "URL", hardware="zero-a10g", api=api
    )
    assert url == "URL" and api.calls == [("request_space_hardware", {"repo_id": "org/name", "hardware": "zero-a10g"})]
    api.error = http_error(403, "403 Forbidden: ZeroGPU is not available for this account")
    with pytest.raises(UserError) as refused:
        deploy_space("org/name", tmp_path / "f", upload=lambda folder, repo: "URL", hardware="zero-a10g", api=api)
    assert str(refused.value) == (
        "could not request zero-a10g hardware for the Space org/name: the Hub answered HTTP 403 (403 Forbidden: "
        "ZeroGPU is not available for this account); hardware: pick ZeroGPU under 'Space hardware' on "
        "https://huggingface.co/spaces/org/name/settings (or deploy again with --hardware zero-a10g)"
    )


def test_an_unknown_hardware_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["deploy-space", "--repo-id", "org/x", "--dry-run", "--hardware", "zero-h200"])
    assert exited.value.code == 2
    assert "argument --hardware: must be a Space hardware flavour (cpu-basic, " in capsys.readouterr().err


def test_assemble_replaces_stale_files(tmp_path):
    out = tmp_path / "f"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    files = assemble_space(out, "org/name")
    assert Path("stale.txt") not in files and not (out / "stale.txt").exists()


def test_bad_repo_id_and_missing_dataset_are_one_line_errors(capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:  # a usage error, as every command's: exit 2
        main(["deploy-space", "--repo-id", "not a repo", "--dry-run"])
    assert exited.value.code == 2
    assert "argument --repo-id: must look like ORG/NAME, got 'not a repo'" in capsys.readouterr().err
    assert main(["serve", "--dataset", str(tmp_path / "missing")]) == 1
    assert "run `negt2ibench build" in capsys.readouterr().err


def test_help_texts(capsys):
    for command in ("serve", "deploy-space"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        assert "--dry-run" in text if command == "deploy-space" else "--port" in text and "NEGT2I_HOME" in text
    from leaderboard.checks.spot_check_policy import spot_check_plan

    plan = spot_check_plan(19_200)  # the help states the policy's plan, and that held entries go first
    with pytest.raises(SystemExit):
        main(["leaderboard", "verify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"{plan.sample_size} of 19,200 images, at most {plan.max_disagreements} may disagree" in text
    assert "is held (taken first)" in text


def start_serve(tmp_path: Path, *options: str) -> tuple[subprocess.Popen, str, Path]:
    """`negt2ibench serve OPTIONS` in a bare environment (offline, HOME and TMPDIR in tmp_path) on a free
    port, once its page answers: the process, its address and its log."""
    port = free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "GRADIO_ANALYTICS_ENABLED": "False",
        "GRADIO_TEMP_DIR": str(tmp_path / "gradio"),
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "NO_PROXY": "localhost,127.0.0.1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(tmp_path / "matplotlib"),
    }
    log_path = tmp_path / "serve.log"  # a file, not a pipe: a full pipe would block the server
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "negt2ibench", "serve", "--port", str(port), *options],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 240  # generous: the first start imports gradio and torch under load
    page = ""
    while time.monotonic() < deadline and process.poll() is None:
        try:
            page = urllib.request.urlopen(url, timeout=5).read().decode()
            break
        except OSError:
            time.sleep(0.5)
    if "NegT2IBench" not in page:
        stop(process)
        raise AssertionError(f"exit code {process.poll()}; server output:\n{log_path.read_text()[-4000:]}")
    return process, url, log_path


def said_until_serving(log_path: Path, process: subprocess.Popen) -> list[str]:
    """`serve`'s progress lines, once the last one (its address, said after the app first answered) is
    in the log: waited for on the log's state, as long as the server runs."""
    deadline = time.monotonic() + 240
    while True:
        said = [line for line in log_path.read_text().splitlines() if line.startswith("serve: ")]
        if any(line.startswith("serve: serving on ") for line in said):
            return said
        assert process.poll() is None and time.monotonic() < deadline, log_path.read_text()[-4000:]
        time.sleep(0.2)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
        process.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_serve_runs_the_app_on_localhost(tmp_path):
    process, url, log_path = start_serve(tmp_path, "--home", str(tmp_path / "home"))
    try:
        said = said_until_serving(log_path, process)
        assert said[:5] == [
            "serve: loading the prompts (the corpus, built in memory) …",
            "serve: opening the leaderboard store …",
            "serve: importing gradio and the app …",
            "serve: building the app …",
            f"serve: starting the server on {url} …",
        ]
        assert said[5].startswith(f"serve: serving on {url} after ") and said[5].endswith("; Ctrl-C stops it")
        assert (tmp_path / "home" / "leaderboard.sqlite").exists()
        assert served_launch_settings(url) == space_launch_settings()  # as launch_local

        client = local_client(url, verbose=False, download_files=str(tmp_path / "downloads"))
        client.predict(api_name="/leaderboard")  # writes the CSV into the app's temporary folder
        client.close()
        [work_dir] = list(tmp_path.glob("negt2i_space_*"))
        assert (work_dir / "negt2ibench_leaderboard.csv").is_file()
        process.send_signal(signal.SIGTERM)  # as a Space's restart stops it
        assert process.wait(timeout=60) == 0, log_path.read_text()[-4000:]
        assert not work_dir.exists()  # removed on SIGTERM too, not only on Ctrl-C
    finally:
        stop(process)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_serve_demo_fills_every_tab_from_the_examples_offline_and_leaves_nothing(tmp_path):
    from space.demo import PENDING_NAME, VERIFIED_NAME

    process, url, log_path = start_serve(tmp_path, "--demo")
    try:
        assert said_until_serving(log_path, process)[:5] == [
            "serve: writing the synthetic examples and the demo's leaderboard store, beside the import …",
            "serve: importing gradio and the app …",
            "serve: waiting for the synthetic examples and the store …",
            "serve: building the app …",
            f"serve: starting the server on {url} …",
        ]
        client = local_client(url, verbose=False, download_files=False)
        board, _, _, awaiting = client.predict(api_name="/leaderboard")
        models = [row[board["headers"].index("model")] for row in board["data"]]
        assert models == ["SD 1.5 + NegationCLIP", "SD 1.5", VERIFIED_NAME]  # synthetic: below the paper's rows
        assert [row[0] for row in update_value(awaiting)["data"]] == [PENDING_NAME]
        summary, thumbnails, *_ = client.predict(
            VERIFIED_NAME, "any", "any", "any", "any", "any", 1, api_name="/gallery"
        )
        assert "192 of 192 images match" in summary and len(update_value(thumbnails)) == 24
        header, _, compared, shown, *_ = client.predict("color_pos1_neg0_000", api_name="/compare")
        assert f"1. **{VERIFIED_NAME}** (verified)" in re.sub(r"\\(.)", r"\1", compared)  # its full name
        shown = update_value(shown)
        assert len(shown) == 4  # its four scenes, one per sample: every slot an image
        assert not [item for item in shown if "unavailable" in str(item).lower()]
        client.close()
        [folder] = list(tmp_path.glob("negt2i_demo_*"))
        assert (folder / "examples" / "sample.jsonl").is_file()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, log_path.read_text()[-4000:]
        assert not folder.exists()  # the demo's store and examples go with it
        assert not (tmp_path / ".cache").exists()  # nothing written to the default store
    finally:
        stop(process)


def test_serve_demo_refuses_options_it_would_ignore(capsys):
    assert main(["serve", "--demo", "--home", "elsewhere", "--dataset", "build/x"]) == 2
    assert capsys.readouterr().err == "error: --demo brings its own prompts, store and sample: drop --dataset, --home\n"


REFUSED_AT_ONCE = """
import json, socket, sys
from negt2ibench.cli import main
busy = socket.socket()
busy.bind(("127.0.0.1", 0))
busy.listen()
port = str(busy.getsockname()[1])
outcomes = []
for argv in json.loads(sys.argv[1]):
    argv = [port if part == "BUSY" else part for part in argv]
    try:
        code = main(argv)
    except SystemExit as exited:
        code = exited.code
    outcomes.append(code)
loaded = sorted(name for name in ("gradio", "space.app", "space.demo", "torch") if name in sys.modules)
print(json.dumps({"codes": outcomes, "loaded": loaded, "port": port}))
"""


def test_a_port_or_host_that_cannot_serve_is_refused_before_anything_loads(tmp_path):
    """A bad --port or --host is argparse's usage error (exit 2), a busy port a one-line error (exit 1),
    each before the prompts, the store or gradio load; nothing about the app is said first."""
    import json

    cases = [
        ["serve", "--port", "99999"],
        ["serve", "--port", "http"],
        ["serve", "--host", "bad host", "--demo"],
        ["serve", "--port", "BUSY", "--home", str(tmp_path / "home")],
        ["serve", "--port", "BUSY", "--demo"],
    ]
    done = subprocess.run(
        [sys.executable, "-c", REFUSED_AT_ONCE, json.dumps(cases)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert outcome["codes"] == [2, 2, 2, 1, 1], done.stderr
    assert outcome["loaded"] == []
    errors = [line for line in done.stderr.splitlines() if not line.startswith(("usage:", " "))]
    busy = f"error: --port {outcome['port']} on 127.0.0.1: in use (another server listens there); pick another port"
    assert errors == [
        "negt2ibench serve: error: argument --port: must be a port number from 1 to 65535, got '99999'",
        "negt2ibench serve: error: argument --port: must be a port number from 1 to 65535, got 'http'",
        "negt2ibench serve: error: argument --host: must be an IP address or a host name (letters, digits, "
        "hyphens and dots), got 'bad host'",
        busy,
        busy,
    ]
    assert not (tmp_path / "home").exists()  # the store was never opened


class AnsweringApp:
    """A stand-in for the built app: `launch` starts a server whose /config answers only after
    `answer_after` questions (a loaded machine's slow start), `block_thread` returns as on Ctrl-C."""

    def __init__(self, answer_after: int):
        self.launched: dict = {}
        self.asked = 0
        self.answer_after = answer_after
        self.closed = False
        self.server: ThreadingHTTPServer | None = None

    def launch(self, **kwargs) -> None:
        self.launched = kwargs
        app = self

        class Config(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                app.asked += 1
                self.send_response(200 if app.asked > app.answer_after else 503)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((kwargs["server_name"], kwargs["server_port"]), Config)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def block_thread(self) -> None:
        assert self.asked > self.answer_after  # said to be serving only once it answered

    def close(self) -> None:
        self.closed = True
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def test_serve_waits_for_the_apps_own_answer_then_says_where_it_is():
    """`space.serving.serve` launches without gradio's 2.5-second check (`_frontend=False`), asks /config
    until it answers, however many times, then says the address, and closes the app at the end."""
    from space.serving import serve

    app, said, port = AnsweringApp(answer_after=5), [], free_port()
    serve(app, "127.0.0.1", port, {"theme": "T"}, said.append, started=time.monotonic())
    assert app.launched == {
        "server_name": "127.0.0.1",
        "server_port": port,
        "prevent_thread_lock": True,
        "quiet": True,
        "_frontend": False,
        "theme": "T",
    }
    assert app.asked == 6 and app.closed
    url = f"http://127.0.0.1:{port}/"
    assert said[0] == f"starting the server on {url} …"
    assert re.fullmatch(rf"serving on {re.escape(url)} after \d+\.\d s: open it in a browser; Ctrl-C stops it", said[1])


@pytest.mark.parametrize(
    ("host", "url"),
    [("127.0.0.1", "http://127.0.0.1:80/"), ("0.0.0.0", "http://127.0.0.1:80/"), ("::", "http://[::1]:80/")]
    + [("::1", "http://[::1]:80/"), ("my-box.lan", "http://my-box.lan:80/")],
)
def test_the_address_said_is_one_a_browser_here_opens(host, url):
    from space.serving import local_url

    assert local_url(host, 80) == url


BUILT_WITHOUT = """
import sys
from dataset_builder.loading import load_prompts
from leaderboard.store.sqlite_store import SQLiteStore
from space.app import build_app
demo = build_app(prompts=load_prompts(None), store=SQLiteStore(sys.argv[1]), recheck_every=None, hub_dataset="")
print(sorted(name for name in ("scipy.stats", "scipy.ndimage", "scipy.spatial", "torch") if name in sys.modules))
demo.close()
"""


@pytest.mark.slow  # a fresh process imports gradio and builds the app
def test_the_app_is_built_without_scipys_statistics_or_images(tmp_path):
    """What the start-up needs not (benchmarks/RESULTS.md, "Starting the Space"): the spot check's and
    the regeneration check's plans are written down (`sampling_plan.SEARCHED_PLANS`), the geometry's
    scipy is imported when a mask is measured, torch when a model loads."""
    done = subprocess.run(
        [sys.executable, "-c", BUILT_WITHOUT, str(tmp_path / "lb.sqlite")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO), "NEGT2I_HOME": str(tmp_path / "home")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "[]"
