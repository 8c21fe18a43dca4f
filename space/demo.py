"""`negt2ibench serve --demo`: every tab of the Space filled from the shipped synthetic examples,
with no weights, no network and no Python to write.

`demo_setup(folder)` writes the examples into FOLDER (`validation.examples.write_examples`, what
`negt2ibench examples` writes) and a SQLite store beside them, holding

- `VERIFIED_NAME`: synthetic scenes of the examples' 48 prompts, 4 each, scored by the real rules and
  verdict from what each scene's drawing says was drawn (`space.demo_scenes`): passes and failures of
  every cause in every category. Its images are drawn when the Gallery and Compare ask. It is stored
  as verified without a spot check (a demo has no weights to re-score with, and its reason says so) and
  `synthetic`: shown below the paper's rows, never ranked;
- `PENDING_NAME`: the examples' drawings' shipped results under the `no_sam` preset, listed apart as
  pending: scored with another configuration than the Space's, it is never spot-checked here;

beside the paper's reported rows, as always. Their numbers come from the real code (`shown_numbers`,
the spot check's fields). The Annotate tab opens on the examples' sample, the Score tab on one
scene with its verdict (`ScoreExample`), labelled. Every page says it is a demo (`DEMO_NOTE`), and
each synthetic thing says so where it is shown: the names, the reasons, the pictures themselves
(SYNTHETIC SCENE, SYNTHETIC EXAMPLE). `DemoSetup.app_kwargs()` are `build_app`'s arguments.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex, PromptRecord
from evaluator.config import PRESETS
from evaluator.resultio import read_results
from evaluator.results import ResultRecord
from leaderboard.checks.compared_fields import shown_numbers
from leaderboard.store.image_sources import ImageSource, ImagesUnreachable
from leaderboard.store.sqlite_store import Entry, SQLiteStore
from negt2ibench.core.errors import UserError
from validation.examples import EXAMPLE_KEY, write_examples

from . import verdict_views
from .demo_scenes import SCENES_KEY, SceneImages, draw_scene, scene_layout, shipped_records
from .tabs.score.score_views import ScoreExample
from .verified_images.verified_views import drawn

VERIFIED_NAME = "Synthetic scenes (demo)"
PENDING_NAME = "Synthetic drawings, no-SAM preset (demo)"
DEMO_SUBMITTER = "demo (synthetic examples)"
DEMO_IMAGES = "local:synthetic-scenes"  # the images "repo" of the verified entry: the scenes, drawn when asked
SCENES = (  # plain text: it is also a stored reason, shown in tables
    "synthetic: labelled rectangles drawn by the demo (each says SYNTHETIC SCENE), scored by the real rules "
    "and verdict from what each drawing says was drawn, so it says nothing about any model"
)
SYNTHETIC = (  # plain text: it is also a stored reason, shown in tables
    "synthetic: the drawings of negt2ibench examples (each says SYNTHETIC EXAMPLE), scored by the real "
    "pipeline with tiny random-weight models standing in for the weights, so it says nothing about any model"
)
DEMO_NOTE = (
    "**Demo (`negt2ibench serve --demo`): nothing here is a model's output.** "
    f"*{VERIFIED_NAME}* (shown below the paper's rows, never ranked; its images in the Gallery and Compare) "
    f"are labelled rectangles the demo draws, scored by the real rules from what each drawing says was drawn; "
    f"*{PENDING_NAME}* (awaiting verification) are the drawings of `negt2ibench examples`. The prompts are the "
    "benchmark's and the rows *reported (paper)* the paper's. Nothing is downloaded; the store is a temporary "
    "folder, removed when the demo stops."
)
EXAMPLE_LABEL = (
    "**Synthetic scene, not scored here:** a drawing of the demo and its verdict, made by the real rules from "
    "what the drawing says was drawn; it says nothing about any model. Score scores it with this machine's "
    "models, when they are here."
)


@dataclass(frozen=True)
class DemoSetup:
    """The demo's files and store, and what `build_app` needs of them."""

    folder: Path
    prompts: list[PromptRecord]
    store: SQLiteStore
    score_example: ScoreExample

    @property
    def examples(self) -> Path:
        return self.folder / "examples"

    def open_images(self, repo_id: str, revision: str, split: str) -> ImageSource:
        """The verified entry's images: the demo's scenes, drawn when asked; nothing else is read."""
        if repo_id != DEMO_IMAGES or split != SCENES_KEY:
            raise ImagesUnreachable("images not reachable: the demo reads only its own synthetic scenes")
        return SceneImages(PromptIndex(self.prompts))

    def app_kwargs(self) -> dict[str, Any]:
        """`build_app`'s arguments for the demo: its store, images, sample, notes; no Hub, no rechecks."""
        return {
            "prompts": self.prompts,
            "store": self.store,
            "open_images": self.open_images,
            "annotation_sample": self.examples / "sample.jsonl",
            "annotation_images": str(self.examples / "dataset"),
            "recheck_every": None,  # the pending entry waits by design: nothing to re-score it with
            "hub_dataset": "",  # no Hub leaderboard to read, whatever NEGT2I_HUB_DATASET says
            "demo_note": DEMO_NOTE,
            "score_example": self.score_example,
        }


def _entry(name: str, key: str, results: list[ResultRecord], **fields: Any) -> Entry:
    row, detail = shown_numbers(results)  # what the Space shows of any submission
    return Entry(
        model_name=name,
        model_key=key,
        submitter=DEMO_SUBMITTER,
        evaluator_version=results[0].evaluator_version,
        config_hash=results[0].config_hash,
        row={**row, "model": name},
        detail=detail,
        **fields,
    )


def _score_example(folder: Path, results: list[ResultRecord], prompts: PromptIndex) -> ScoreExample:
    """A relation scene whose verdict fails one statement and passes another, written to FOLDER, with that verdict."""
    from PIL import Image

    record = min(
        (r for r in results if r.prompt_id.startswith("directional") and len({s.satisfied for s in r.statements}) == 2),
        key=lambda r: (r.prompt_id, r.sample_index),
    )
    prompt = prompts[record.prompt_id]
    picture = folder / f"scene_{record.prompt_id}_{record.sample_index}.png"
    picture.write_bytes(draw_scene(prompt, scene_layout(prompt, record.sample_index)))
    with Image.open(picture) as image:
        shown = drawn(image.convert("RGB"), record)
    summary = f"{verdict_views.verdict_summary(prompt, record)}\n\n{EXAMPLE_LABEL}"
    return ScoreExample(str(picture), prompt.prompt_id, shown, summary, verdict_views.verdict_frame(prompt, record))


STORE_FILE = "leaderboard.sqlite"
WRITES_BESIDE = sys.platform == "linux"  # where `start_demo` forks its writer (fork is safe and cheap there)


@dataclass(frozen=True)
class WrittenDemo:
    """What `write_demo` hands back beside its files: the prompts it read and the Score tab's example."""

    prompts: list[PromptRecord]
    score_example: ScoreExample


def demo_setup(folder: str | Path) -> DemoSetup:
    """Write the examples and the demo's store into FOLDER (empty or absent); what the app needs."""
    return open_demo(folder, write_demo(folder))


def open_demo(folder: str | Path, written: WrittenDemo) -> DemoSetup:
    """The demo `write_demo` wrote into FOLDER, its store opened here."""
    folder = Path(folder)
    return DemoSetup(folder, written.prompts, SQLiteStore(folder / STORE_FILE), written.score_example)


def write_demo(folder: str | Path) -> WrittenDemo:
    """Write the examples, the demo's store and the Score tab's example picture into FOLDER."""
    folder = Path(folder)
    examples = folder / "examples"
    write_examples(examples)
    store = SQLiteStore(folder / STORE_FILE)
    scenes = shipped_records()
    store.add_submission(
        _entry(
            VERIFIED_NAME,
            SCENES_KEY,
            scenes,
            status="verified",
            reason=f"demo entry, {SCENES}; stored as verified without a spot check (a demo has no weights)",
            images_repo=DEMO_IMAGES,
            images_revision="main",
            synthetic=True,
        ),
        scenes,
    )
    no_sam = read_results(examples / "results" / "no_sam.jsonl")
    space_config = PRESETS["current"].config_hash
    store.add_submission(
        _entry(
            PENDING_NAME,
            f"{EXAMPLE_KEY}_no_sam",
            no_sam,
            status="pending",
            reason=(
                f"demo entry, {SYNTHETIC}; it was scored with the no_sam preset (config {no_sam[0].config_hash}), "
                f"not this Space's (config {space_config}), so its spot check cannot run here"
            ),
        ),
        no_sam,
    )
    prompts = load_prompts(None)
    return WrittenDemo(prompts, _score_example(folder, scenes, PromptIndex(prompts)))


def start_demo(folder: str | Path) -> Callable[[], DemoSetup]:
    """Start writing the demo into FOLDER; the call returned waits for it and opens it.

    On Linux the writing (2 to 3 s: the corpus, the examples' drawings, supervision for the example's
    verdict) runs in a forked process, so what the caller does next (importing gradio, 5 s) runs beside
    it on another core; elsewhere, where forking is not safe, it is written here and now."""
    if not WRITES_BESIDE:
        setup = demo_setup(folder)
        return lambda: setup
    # forked before gradio is imported: no thread runs yet, and the child needs none of it
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
    writing = pool.submit(write_demo, str(folder))

    def opened() -> DemoSetup:
        try:
            written = writing.result()
        except BrokenProcessPool as error:
            raise DemoNotWritten(f"the demo's writer stopped before it finished ({error}); run it again") from None
        finally:
            pool.shutdown()
        return open_demo(folder, written)

    return opened


class DemoNotWritten(UserError):
    """The process writing the demo's files died (killed, out of memory) before it finished."""
