"""The NegT2IBench Space: explore the prompts, score an upload, the leaderboard, submissions.

`build_app()` assembles the Gradio Blocks; every handler turns bad input into a status message
(never a stack trace). The models are a module-level lazy singleton (`get_perception`), loaded
on the first score; `build_app(perception=...)` installs a test double instead. The scoring
function is decorated with `spaces.GPU` (a no-op off ZeroGPU) and returns CPU objects only.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gradio as gr
import matplotlib.pyplot  # noqa: F401  (see below)
import pandas as pd
import spaces
from PIL import Image

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex, PromptLookupError, PromptRecord
from dataset_builder.vocabulary import CATEGORIES, OBJECT_CLASSES, SETTINGS, setting_label, setting_name
from evaluator.config import EVALUATOR_VERSION, PRESETS
from evaluator.results import CAUSES, ResultRecord
from negt2ibench.errors import UserError

from .store import Entry, LeaderboardStore, open_store
from .submissions import ImageSourceFactory, SubmissionError, SubmissionForm, SubmissionLimits, hub_images, submit

# gradio switches matplotlib's backend around every event, importing pyplot on first use; two
# first events at once then race on a half-imported module ("partially initialized module
# 'matplotlib.pyplot'"). Importing it above, before any event runs, removes the race.

log = logging.getLogger(__name__)

CONFIG = PRESETS["current"]
ANY = "any"
SETTING_CHOICES = [(f"{setting_label(p, n)} ({setting_name(p, n)})", setting_name(p, n)) for p, n in SETTINGS]
LEADERBOARD_HEADERS = (
    ["model", "status"]
    + [setting_label(p, n) for p, n in SETTINGS]
    + [
        "color",
        "material",
        "comparative",
        "depth",
        "directional",
        "proximity",
        "overall",
        "polarity_gap",
        "coverage",
        "images",
        "link",
    ]
)
REPORTED = "reported (paper)"
# Table 3 of the NegT2IBench paper: the rows whose numbers the paper's text gives.
PAPER_ROWS: tuple[dict[str, Any], ...] = (
    {
        "model": "SD 1.5",
        "1:0": 36.1,
        "0:1": 44.1,
        "2:0": 7.3,
        "1:1": 9.7,
        "0:2": 14.0,
        "2:1": 1.8,
        "1:2": 2.4,
        "2:2": 0.5,
        "color": 27.7,
        "material": 22.8,
        "comparative": 8.9,
        "depth": 8.8,
        "directional": 9.6,
        "proximity": 9.1,
        "overall": 14.5,
    },
    {
        "model": "SD 1.5 + NegationCLIP",
        "1:0": 35.7,
        "0:1": 44.3,
        "2:0": 8.8,
        "1:1": 9.6,
        "0:2": 15.5,
        "2:1": 1.8,
        "1:2": 3.0,
        "2:2": 0.5,
        "color": 28.3,
        "material": 23.9,
        "comparative": 8.4,
        "depth": 9.4,
        "directional": 10.0,
        "proximity": 9.2,
        "overall": 14.9,
    },
)
# theme/css go to launch() in gradio 6; uploads above the size limit are refused before any handler runs.
LAUNCH_KWARGS: dict[str, Any] = {
    "theme": gr.themes.Soft(),
    "css": ".verdict-pass{color:#15803d}.verdict-fail{color:#b91c1c}",
    "max_file_size": f"{SubmissionLimits().max_bytes // 2**20}mb",
}

# ----------------------------------------------------------------------------- models (GPU side)

_PERCEPTION: Any = None
_PERCEPTION_LOCK = threading.Lock()


def get_perception() -> Any:
    """The perception models, created once per process (lazily: loading starts on the first score)."""
    global _PERCEPTION
    with _PERCEPTION_LOCK:
        if _PERCEPTION is None:
            from evaluator.perception import ModelPerception

            _PERCEPTION = ModelPerception(CONFIG, device="auto")
        return _PERCEPTION


def preload_models() -> None:
    """Load every model now. On ZeroGPU this must happen in the main process at start-up: each
    `@spaces.GPU` call runs in a forked worker, so models loaded there would be lost after the call."""
    try:
        get_perception().load_all()
    except UserError as error:  # e.g. weights missing: the app still starts, scoring shows the reason
        log.warning("models not loaded at start-up: %s", error)


def on_zero_gpu() -> bool:
    return bool(spaces.config.Config.zero_gpu)


def set_perception(perception: Any) -> None:
    """Install a perception (a test double, or models loaded elsewhere) for this process."""
    global _PERCEPTION
    with _PERCEPTION_LOCK:
        _PERCEPTION = perception


@spaces.GPU(duration=120)
def score_on_gpu(
    image: Image.Image, prompt: PromptRecord, model_key: str = "upload", sample_index: int = 0
) -> tuple[ResultRecord, Image.Image]:
    """Score one image and draw the verdict on it (CPU objects out, as ZeroGPU pickles them)."""
    from evaluator.annotate import annotate
    from evaluator.pipeline import score_image

    result, observation = score_image(
        image, prompt, get_perception(), config=CONFIG, model_key=model_key, sample_index=sample_index
    )
    return result, annotate(image, observation, result)


def rescore(image: Image.Image, prompt: PromptRecord, model_key: str, sample_index: int) -> ResultRecord:
    """The spot check's scorer: the same GPU function, verdict only."""
    return score_on_gpu(image, prompt, model_key, sample_index)[0]


# ----------------------------------------------------------------------------- pure views


def prompt_label(record: PromptRecord) -> str:
    return f"{record.prompt_id}: {record.prompt}"


def filter_prompts(
    prompts: Sequence[PromptRecord], category: str = ANY, setting: str = ANY, load: str = ANY, obj: str = ANY
) -> list[PromptRecord]:
    """Prompts matching every filter that is not `any`."""
    return [
        p
        for p in prompts
        if (category in (ANY, "", None) or p.category == category)
        and (setting in (ANY, "", None) or p.setting == setting)
        and (load in (ANY, "", None) or str(p.load) == str(load))
        and (obj in (ANY, "", None) or obj in p.objects)
    ]


def statements_frame(record: PromptRecord) -> pd.DataFrame:
    from dataset_builder.grammar import statement_sentence

    rows = [
        {
            "#": s.index,
            "polarity": s.polarity,
            "subject": s.subject,
            "target": s.target or "",
            "predicate": s.predicate,
            "sentence": statement_sentence(record, s),
        }
        for s in record.statements
    ]
    return pd.DataFrame(rows, columns=["#", "polarity", "subject", "target", "predicate", "sentence"])


def group_frame(record: PromptRecord, prompts: Sequence[PromptRecord]) -> pd.DataFrame:
    rows = [
        {"prompt_id": p.prompt_id, "setting": setting_label(p.num_pos, p.num_neg), "prompt": p.prompt}
        for p in prompts
        if p.group_id == record.group_id
    ]
    return pd.DataFrame(rows, columns=["prompt_id", "setting", "prompt"])


VERDICT_COLUMNS = ["item", "text", "polarity", "verdict", "cause", "observed", "measured"]


def verdict_frame(prompt: PromptRecord, result: ResultRecord) -> pd.DataFrame:
    """Every object and statement of the prompt with its verdict, cause and measured numbers."""
    from evaluator.annotate import statement_table

    rows = []
    for obj in result.objects:
        box = ", ".join(f"{v:.0f}" for v in obj.box) if obj.box else ""
        rows.append(
            {
                "item": "object",
                "text": obj.name,
                "polarity": "",
                "verdict": "present" if obj.present else "missing",
                "cause": "",
                "observed": "",
                "measured": f"confidence={obj.confidence:.3f}" + (f"; box=[{box}]" if box else ""),
            }
        )
    for row in statement_table(prompt, result):
        rows.append(
            {
                "item": f"statement {row['index']}",
                "text": row["statement"],
                "polarity": row["polarity"],
                "verdict": row["verdict"],
                "cause": row["cause"],
                "observed": row["observed"],
                "measured": row["measurements"],
            }
        )
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def newest_entries(entries: Sequence[Entry]) -> list[Entry]:
    """Per model, its newest verified entry, else its newest pending one; rejected ones never."""
    chosen: dict[str, Entry] = {}
    for entry in sorted(entries, key=lambda e: e.created_at):
        if entry.status == "rejected" or entry.row is None:
            continue
        current = chosen.get(entry.model_key)
        if current is None or entry.status == "verified" or current.status == "pending":
            chosen[entry.model_key] = entry
    return list(chosen.values())


def leaderboard_frame(entries: Sequence[Entry], include_paper: bool = True) -> pd.DataFrame:
    """One row per model: Table 3's columns, the polarity gap, coverage and status; best overall first."""
    rows = []
    for entry in newest_entries(entries):
        row = {key: entry.row.get(key) for key in LEADERBOARD_HEADERS if key in entry.row}  # type: ignore[union-attr]
        row.update({"model": entry.model_name, "status": entry.status, "link": entry.link})
        rows.append(row)
    if include_paper:
        for paper in PAPER_ROWS:
            rows.append(
                {
                    **paper,
                    "status": REPORTED,
                    "polarity_gap": round(paper["0:1"] - paper["1:0"], 1),
                    "link": "https://arxiv.org (NegT2IBench paper, Table 3)",
                }
            )
    frame = pd.DataFrame(rows, columns=LEADERBOARD_HEADERS)
    for column in LEADERBOARD_HEADERS[2:-1]:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").round(1 if column != "images" else 0)
    return frame.sort_values("overall", ascending=False, na_position="last").reset_index(drop=True)


def polarity_frame(entry: Entry) -> pd.DataFrame:
    """Statement accuracy per category and polarity (long form, for the plot)."""
    accuracy = (entry.detail or {}).get("statement_accuracy", {})
    rows = [
        {"category": c, "polarity": p, "accuracy": accuracy[c][p]}
        for c in CATEGORIES
        if c in accuracy
        for p in ("positive", "negated")
    ]
    return pd.DataFrame(rows, columns=["category", "polarity", "accuracy"])


def polarity_figure(entry: Entry | None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 3.2), layout="constrained")
    frame = polarity_frame(entry) if entry else pd.DataFrame(columns=["category", "polarity", "accuracy"])
    if frame.empty:
        axis.text(0.5, 0.5, "no statement-level results for this model", ha="center", va="center")
        axis.set_axis_off()
        return figure
    wide = frame.pivot(index="category", columns="polarity", values="accuracy").reindex(
        [c for c in CATEGORIES if c in set(frame["category"])]
    )
    wide[["positive", "negated"]].plot.bar(ax=axis, color={"positive": "#2563eb", "negated": "#f97316"}, rot=0)
    axis.set_ylabel("statements satisfied (%)")
    axis.set_ylim(0, 100)
    axis.set_xlabel("")
    axis.set_title(f"{entry.model_name}: positive vs negated statements")  # type: ignore[union-attr]
    return figure


def causes_frame(entry: Entry | None) -> pd.DataFrame:
    causes = (entry.detail or {}).get("failure_causes", {}) if entry else {}
    rows = [
        {"category": c, **{k: int(causes[c].get(k, 0)) for k in CAUSES}, "failed": int(causes[c].get("failed", 0))}
        for c in CATEGORIES
        if c in causes
    ]
    return pd.DataFrame(rows, columns=["category", *CAUSES, "failed"])


def submissions_frame(entries: Sequence[Entry]) -> pd.DataFrame:
    rows = [
        {
            "submitted (UTC)": time.strftime("%Y-%m-%d %H:%M", time.gmtime(e.created_at)),
            "model": e.model_name,
            "submitter": e.submitter,
            "status": e.status,
            "reason": e.reason,
            "id": e.submission_id[:8],
        }
        for e in sorted(entries, key=lambda e: e.created_at, reverse=True)
    ]
    return pd.DataFrame(rows, columns=["submitted (UTC)", "model", "submitter", "status", "reason", "id"])


def _error(message: str) -> str:
    gr.Warning(message.splitlines()[0])
    return f"**Error:** {message.splitlines()[0]}" + (
        "\n\n```text\n" + "\n".join(message.splitlines()[1:]) + "\n```" if "\n" in message else ""
    )


def requester(request: gr.Request | None, profile: Any = None) -> str:
    """The user signed in with Hugging Face, else the logged-in user, else the client's IP address,
    else "anonymous".

    Behind the Spaces proxy the client is the proxy, so the IP comes from X-Forwarded-For: its
    last entry, the one the proxy itself appended (earlier entries are whatever the client sent)."""
    hub_user = getattr(profile, "username", None)
    if hub_user:
        return f"hf:{hub_user}"
    if request is None:
        return "anonymous"
    username = getattr(request, "username", None)
    if username:
        return str(username)
    headers = getattr(request, "headers", None) or {}
    forwarded = headers.get("x-forwarded-for", "") if hasattr(headers, "get") else ""
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    if hops:
        return f"ip:{hops[-1]}"
    client = getattr(request, "client", None)
    host = getattr(client, "host", None) if client else None
    return f"ip:{host}" if host else "anonymous"


# ----------------------------------------------------------------------------- the app


def build_app(
    *,
    prompts: Sequence[PromptRecord] | None = None,
    dataset: str | Path | None = None,
    store: LeaderboardStore | None = None,
    perception: Any = None,
    open_images: ImageSourceFactory = hub_images,
    limits: SubmissionLimits | None = None,
    preload: bool | None = None,
    require_login: bool | None = None,
) -> gr.Blocks:
    """The Space. Prompts from `prompts`, else the built `dataset` folder, else the corpus built in
    memory; the store from `store`, else `open_store()` (SQLite under NEGT2I_HOME or the Hub repo).
    Models load on the first score, or now when `preload` (default: when running on ZeroGPU).
    `require_login` (default: when running on a Hugging Face Space) shows "Sign in with Hugging
    Face" and refuses anonymous submissions, so the per-user limits key on a real account."""
    limits = limits or SubmissionLimits()
    if require_login is None:
        require_login = bool(os.environ.get("SPACE_ID"))
    if prompts is None:
        prompts = load_prompts(dataset)
    prompts = list(prompts)
    index = PromptIndex(prompts)
    store = store if store is not None else open_store()
    if perception is not None:
        set_perception(perception)
    elif preload if preload is not None else on_zero_gpu():
        preload_models()
    work_dir = Path(tempfile.mkdtemp(prefix="negt2i_space_"))
    prompt_choices = [(prompt_label(p), p.prompt_id) for p in prompts]

    # --- explore
    def explore(category: str, setting: str, load: str, obj: str):
        matches = filter_prompts(prompts, category, setting, load, obj)
        frame = pd.DataFrame(
            [
                {"prompt_id": p.prompt_id, "setting": setting_label(p.num_pos, p.num_neg), "prompt": p.prompt}
                for p in matches[:1000]
            ],
            columns=["prompt_id", "setting", "prompt"],
        )
        note = f"{len(matches)} prompts" + (" (first 1000 shown)" if len(matches) > 1000 else "")
        first = matches[0].prompt_id if matches else None
        return note, frame, gr.update(choices=[(prompt_label(p), p.prompt_id) for p in matches[:1000]], value=first)

    def show_prompt(prompt_id: str | None):
        empty_statements = pd.DataFrame(columns=["#", "polarity", "subject", "target", "predicate", "sentence"])
        empty_group = pd.DataFrame(columns=["prompt_id", "setting", "prompt"])
        if not prompt_id:
            return "Pick a prompt.", empty_statements, empty_group
        try:
            record = index[prompt_id.strip()]
        except PromptLookupError as error:
            return _error(str(error)), empty_statements, empty_group
        header = (
            f"### `{record.prompt_id}`\n\n> {record.prompt}\n\n"
            f"category **{record.category}** ({record.kind}), "
            f"setting **{setting_label(record.num_pos, record.num_neg)}**, "
            f"load {record.load}, objects: {', '.join(record.objects)}; matched group `{record.group_id}`"
        )
        return header, statements_frame(record), group_frame(record, prompts)

    def pick_row(event: gr.SelectData):
        row = event.row_value or []
        return row[0] if row else None

    # --- score
    def score(upload: str | None, prompt_id: str | None, custom_prompt: str | None):
        from dataset_builder.grammar import PromptParseError, parse_prompt
        from evaluator.images import ImageError, load_image

        nothing = (None, pd.DataFrame(columns=VERDICT_COLUMNS), None)
        if not upload:
            return (None, _error("upload an image (PNG or JPEG)"), *nothing[1:])
        try:
            image = load_image(upload)
        except ImageError as error:
            return (None, _error(f"cannot score this upload: {error}"), *nothing[1:])
        try:
            if custom_prompt and custom_prompt.strip():
                record = parse_prompt(custom_prompt)
            elif prompt_id:
                record = index[prompt_id.split(":", 1)[0].strip()]  # a typed "id: text" label works too
            else:
                return (None, _error("pick a benchmark prompt or type a prompt in the grammar"), *nothing[1:])
        except PromptParseError as error:
            return (None, _error(f"cannot parse the prompt: {error}"), *nothing[1:])
        except PromptLookupError as error:
            return (None, _error(str(error)), *nothing[1:])
        try:
            result, annotated = score_on_gpu(image, record)
        except UserError as error:  # e.g. MissingWeightsError
            return (None, _error(str(error)), *nothing[1:])
        except Exception as error:  # noqa: BLE001 - shown as one line; the traceback goes to the log
            log.exception("scoring failed")
            return (None, _error(f"scoring failed: {type(error).__name__}: {error}"), *nothing[1:])
        verdict = "PASS" if result.passed else "FAIL"
        satisfied = sum(s.satisfied for s in result.statements)
        summary = (
            f"## Image verdict: <span class='verdict-{verdict.lower()}'>{verdict}</span>\n\n> {record.prompt}\n\n"
            f"{sum(o.present for o in result.objects)}/{len(result.objects)} objects present, "
            f"{satisfied}/{len(result.statements)} statements satisfied "
            f"(evaluator {result.evaluator_version}, config {result.config_hash})"
        )
        out = work_dir / f"result_{record.prompt_id}_{time.time_ns()}.json"
        out.write_text(result.model_dump_json(indent=2), encoding="utf-8")
        return annotated, summary, verdict_frame(record, result), str(out)

    # --- leaderboard
    def leaderboard():
        entries = store.list_entries()
        frame = leaderboard_frame(entries)
        csv_path = work_dir / "negt2ibench_leaderboard.csv"
        frame.to_csv(csv_path, index=False)
        models = [e.model_name for e in newest_entries(entries)]
        return frame, str(csv_path), gr.update(choices=models, value=models[0] if models else None)

    def model_details(model_name: str | None):
        entry = next((e for e in newest_entries(store.list_entries()) if e.model_name == model_name), None)
        if entry is None:
            return (
                "Pick a submitted model (paper-reported rows have no detail).",
                polarity_figure(None),
                causes_frame(None),
            )
        status = f"**{entry.model_name}**: {entry.status} ({entry.reason}); submitted by {entry.submitter}"
        if entry.images_repo:
            status += f"; images `{entry.images_repo}@{entry.images_revision}`"
        if entry.link:
            status += f"; [link]({entry.link})"
        return status, polarity_figure(entry), causes_frame(entry)

    # --- submit
    def submit_results(
        results_file: str | None,
        model_name: str,
        link: str,
        images_repo: str,
        revision: str,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        submitter = requester(request, profile)
        if require_login and profile is None:
            message = _error("sign in with Hugging Face (button above) to submit: limits are per account")
        elif not results_file:
            message = _error("upload the results JSONL written by `negt2ibench score`")
        else:
            form = SubmissionForm(
                model_name=model_name or "",
                link=link or "",
                images_repo=images_repo or "",
                images_revision=revision or "",
                submitter=submitter,
            )
            try:
                entry = submit(
                    store,
                    form,
                    results_file,
                    prompts=index,
                    score=rescore,
                    open_images=open_images,
                    config=CONFIG,
                    limits=limits,
                )
                message = (
                    f"**{entry.model_name}**: status **{entry.status}**: {entry.reason} "
                    f"(id `{entry.submission_id[:8]}`)"
                )
                if entry.status == "rejected":
                    gr.Warning(f"submission rejected: {entry.reason}")
            except SubmissionError as error:
                message = _error(str(error))
            except Exception as error:  # noqa: BLE001
                log.exception("submission failed")
                message = _error(f"submission failed, nothing was stored: {type(error).__name__}: {error}")
        return message, submissions_frame(store.list_entries())

    with gr.Blocks(title="NegT2IBench") as demo:
        gr.Markdown(
            "# NegT2IBench\nDo text-to-image models respect *negation*? 4,800 prompts in 6 categories × 8 "
            "positive:negated settings, scored by a detector-based evaluator "
            f"(version {EVALUATOR_VERSION}, config `{CONFIG.config_hash}`)."
        )
        with gr.Tab("Explore", id="explore"):
            with gr.Row():
                category = gr.Dropdown([ANY, *CATEGORIES], value=ANY, label="Category")
                setting = gr.Dropdown([(ANY, ANY), *SETTING_CHOICES], value=ANY, label="Setting (P:N)")
                load = gr.Dropdown([ANY, "1", "2", "3", "4"], value=ANY, label="Load")
                obj = gr.Dropdown([ANY, *OBJECT_CLASSES], value=ANY, label="Object", filterable=True)
            count = gr.Markdown()
            table = gr.Dataframe(
                headers=["prompt_id", "setting", "prompt"],
                interactive=False,
                max_height=320,
                show_search="filter",
                label="Prompts (click a row)",
            )
            chosen = gr.Dropdown(prompt_choices[:1000], label="Prompt", filterable=True, allow_custom_value=True)
            detail = gr.Markdown()
            statements = gr.Dataframe(
                headers=["#", "polarity", "subject", "target", "predicate", "sentence"],
                label="Statements",
                interactive=False,
            )
            group = gr.Dataframe(
                headers=["prompt_id", "setting", "prompt"],
                label="Matched group (same content, other polarities)",
                interactive=False,
            )
            filters = [category, setting, load, obj]
            for control in filters:
                control.change(explore, filters, [count, table, chosen], api_name=False).then(
                    show_prompt, chosen, [detail, statements, group], api_name=False
                )
            table.select(pick_row, None, chosen, api_name=False)
            chosen.change(show_prompt, chosen, [detail, statements, group], api_name="prompt")
            gr.Button("Filter", visible=False).click(explore, filters, [count, table, chosen], api_name="explore")
        with gr.Tab("Score an image", id="score"):
            with gr.Row():
                with gr.Column():
                    upload = gr.File(label="Image (PNG / JPEG)", file_types=["image"], type="filepath")
                    prompt_pick = gr.Dropdown(
                        prompt_choices,
                        label="Benchmark prompt (type an id or words to search)",
                        filterable=True,
                        allow_custom_value=True,
                    )
                    custom = gr.Textbox(
                        label="…or a prompt in the benchmark grammar",
                        lines=2,
                        placeholder="a photo of a cat and a dog, where the cat is not left of the dog",
                    )
                    score_button = gr.Button("Score", variant="primary")
                with gr.Column():
                    annotated = gr.Image(label="Annotated", format="png", type="pil", interactive=False)
                    verdict = gr.Markdown(elem_id="verdict")
            verdicts = gr.Dataframe(
                headers=VERDICT_COLUMNS, label="Objects and statements", interactive=False, wrap=True
            )
            result_file = gr.File(label="Result JSON")
            score_button.click(
                score, [upload, prompt_pick, custom], [annotated, verdict, verdicts, result_file], api_name="score"
            )
        with gr.Tab("Leaderboard", id="leaderboard"):
            gr.Markdown(
                f"Accuracy (%) of images passing every statement. Rows marked *{REPORTED}* are copied from "
                "the paper's Table 3 and were not scored here. `polarity_gap` = 0:1 − 1:0."
            )
            board = gr.Dataframe(
                headers=LEADERBOARD_HEADERS,
                interactive=False,
                show_search="filter",
                pinned_columns=1,
                label="Leaderboard",
                elem_id="leaderboard",
            )
            with gr.Row():
                refresh = gr.Button("Refresh")
                csv_file = gr.File(label="CSV")
            model_pick = gr.Dropdown([], label="Model detail")
            model_status = gr.Markdown()
            plot = gr.Plot(label="Positive vs negated statements per category")
            causes = gr.Dataframe(
                headers=["category", *CAUSES, "failed"],
                interactive=False,
                label="Failure causes by category (failed statements)",
            )
            refresh.click(leaderboard, None, [board, csv_file, model_pick], api_name="leaderboard")
            model_pick.change(model_details, model_pick, [model_status, plot, causes], api_name="model_detail")
        with gr.Tab("Submit", id="submit"):
            gr.Markdown(
                "Submit the JSONL written by `negt2ibench score` for all 4,800 prompts × 4 samples, scored with "
                f"evaluator {EVALUATOR_VERSION} / config `{CONFIG.config_hash}`, and the Hub dataset holding the "
                f"images (config `images`, split = the model key). {limits.spot_check_k} random images are re-scored "
                f"to verify. Limits: {limits.max_bytes // 2**20} MB, {limits.per_day} submissions per user per day."
            )
            if require_login and os.environ.get("SPACE_ID"):
                # Off a Space gradio mocks the OAuth routes with the local HF token (and a whoami call).
                gr.LoginButton()
            results_upload = gr.File(label="results JSONL", file_types=[".jsonl"], type="filepath")
            with gr.Row():
                model_name = gr.Textbox(label="Model name")
                link = gr.Textbox(label="Link (paper / model card)")
            with gr.Row():
                images_repo = gr.Textbox(label="Images dataset (Hub repo id)", placeholder="org/negt2ibench-images")
                revision = gr.Textbox(label="Revision", value="main")
            send = gr.Button("Submit", variant="primary")
            submit_status = gr.Markdown()
            submissions = gr.Dataframe(
                headers=list(submissions_frame([]).columns), label="Submissions", interactive=False, wrap=True
            )
            send.click(
                submit_results,
                [results_upload, model_name, link, images_repo, revision],
                [submit_status, submissions],
                api_name="submit",
            )
        demo.load(explore, filters, [count, table, chosen], api_name=False).then(
            show_prompt, chosen, [detail, statements, group], api_name=False
        )
        demo.load(leaderboard, None, [board, csv_file, model_pick], api_name=False)
        demo.load(lambda: submissions_frame(store.list_entries()), None, submissions, api_name=False)
    return demo
