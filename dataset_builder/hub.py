"""The Hub-ready dataset folder: write it atomically, list what a push uploads, push it.

The folder's layout (file names, image splits, atomic writes) is `dataset_builder.layout`'s.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from negt2ibench.core.atomic import atomic_folder, recover_folder, writable_parent
from negt2ibench.core.errors import UserError
from negt2ibench.core.options import check
from negt2ibench.core.options import repo_id as repo_id_option

from . import card
from .benchmark import write_eval_yaml
from .layout import (
    CARD_FILE,
    EVAL_FILE,
    IMAGES_DIR,
    PROMPTS_DIR,
    PROMPTS_JSONL,
    PROMPTS_PARQUET,
    RESULTS_DIR,
    TRAIN_OUTPUTS,
    image_splits,
)
from .records import PromptRecord

# Entries a rebuild may find in an existing folder. Generated images and results cost GPU hours,
# so `--overwrite` carries them over instead of deleting them; anything else means the folder is
# not ours and is left alone.
_BUILD_OUTPUTS = frozenset({CARD_FILE, EVAL_FILE, PROMPTS_DIR, PROMPTS_JSONL, *TRAIN_OUTPUTS})
_KEPT_ON_REBUILD = frozenset({IMAGES_DIR, RESULTS_DIR, ".gitattributes", ".huggingface", ".cache"})

# The `datasets` features of the prompts config as they appear in the parquet schema metadata.
# Written out here so a build does not pay the ~2 s import of `datasets`; a test checks it equals
# `records.prompt_features().arrow_schema` exactly.
_STRING = {"dtype": "string", "_type": "Value"}
_INT32 = {"dtype": "int32", "_type": "Value"}
PROMPT_FEATURES_DICT: dict = {
    "prompt_id": _STRING,
    "group_id": _STRING,
    "category": _STRING,
    "kind": _STRING,
    "num_pos": _INT32,
    "num_neg": _INT32,
    "load": _INT32,
    "setting": _STRING,
    "prompt": _STRING,
    "objects": {"feature": _STRING, "_type": "List"},
    "statements": {
        "feature": {
            "index": _INT32,
            "polarity": _STRING,
            "subject": _STRING,
            "target": _STRING,
            "predicate": _STRING,
            "text": _STRING,
        },
        "_type": "List",
    },
}
_STATEMENT_TYPE = pa.struct(
    [
        ("index", pa.int32()),
        ("polarity", pa.string()),
        ("subject", pa.string()),
        ("target", pa.string()),
        ("predicate", pa.string()),
        ("text", pa.string()),
    ]
)
PROMPT_ARROW_SCHEMA = pa.schema(
    [
        ("prompt_id", pa.string()),
        ("group_id", pa.string()),
        ("category", pa.string()),
        ("kind", pa.string()),
        ("num_pos", pa.int32()),
        ("num_neg", pa.int32()),
        ("load", pa.int32()),
        ("setting", pa.string()),
        ("prompt", pa.string()),
        ("objects", pa.list_(pa.string())),
        ("statements", pa.list_(_STATEMENT_TYPE)),
    ],
    metadata={"huggingface": json.dumps({"info": {"features": PROMPT_FEATURES_DICT}})},
)


# --------------------------------------------------------------------------- writing


def write_prompt_files(
    records: Sequence[PromptRecord], dataset_dir: Path, parquet: str = PROMPTS_PARQUET
) -> list[Path]:
    """Write the JSONL copy and the parquet split into `dataset_dir` (byte-identical for equal records).

    The parquet file is read back from the JSONL with the explicit schema: the two can never
    disagree, and it avoids the ~1 s pandas import that building Arrow tables from Python objects costs.
    """
    import pyarrow.json as pa_json

    jsonl_path = dataset_dir / PROMPTS_JSONL
    with jsonl_path.open("w", encoding="utf-8", newline="\n") as handle:
        for record in records:
            handle.write(record.model_dump_json() + "\n")
    table = pa_json.read_json(
        jsonl_path,
        read_options=pa_json.ReadOptions(use_threads=False),
        parse_options=pa_json.ParseOptions(explicit_schema=PROMPT_ARROW_SCHEMA, unexpected_field_behavior="error"),
    ).replace_schema_metadata(PROMPT_ARROW_SCHEMA.metadata)
    parquet_path = dataset_dir / parquet
    parquet_path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, parquet_path, compression="snappy")
    return [parquet_path, jsonl_path]


def check_output_dir(out_dir: Path, overwrite: bool) -> None:
    """Refuse, with one clear line, an output folder we must not or cannot write."""
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"{out_dir} exists and is not a folder; choose another --out")
    if out_dir.is_dir():
        entries = {entry.name for entry in out_dir.iterdir()}
        foreign = sorted(entries - _BUILD_OUTPUTS - _KEPT_ON_REBUILD)
        if foreign:  # not ours: --overwrite would not help, so do not suggest it
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise UserError(
                f"{out_dir} is not a NegT2IBench dataset folder (it holds {shown}); build into a new or "
                f"empty folder, or into an earlier build's folder with --overwrite"
            )
        if entries and not overwrite:
            raise UserError(f"{out_dir} is not empty; pass --overwrite to rebuild it (images/ and results/ are kept)")
    parent = writable_parent(out_dir)
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"cannot write to {out_dir}: {parent} is not a writable folder")


def write_dataset_folder(records: Sequence[PromptRecord], out_dir: str | Path, *, overwrite: bool = False) -> Path:
    """Write the whole folder atomically (`negt2ibench.core.atomic.atomic_folder`: a staging folder, then a rename).

    A killed build leaves the old folder intact, or a swap half done that the next command
    finishes (`negt2ibench.core.atomic.recover_folder`): never half a folder. With `overwrite`, generated
    `images/` and `results/` of the old folder move into the new one, untouched.
    """
    out = Path(out_dir).expanduser().absolute()
    recover_folder(out)  # an earlier build killed mid-swap is finished before anything is checked
    check_output_dir(out, overwrite)
    previous = out if out.is_dir() else None
    repo_id = card.published_repo_id(out) if previous else None  # a rebuilt card keeps naming its Hub repo
    with atomic_folder(out, keep=_KEPT_ON_REBUILD) as staging:
        write_prompt_files(records, staging)
        write_eval_yaml(staging)
        # The kept image splits are still in the old folder: the card lists them from there.
        card.write_card(staging, records=records, repo_id=repo_id, images_from=previous)
    return out


# --------------------------------------------------------------------------- reading the layout


def upload_paths(dataset_dir: str | Path, images: Iterable[str] | None = None) -> list[str]:
    """Repo paths a push uploads: everything (eval.yaml included: a push writes it), or with `images`
    only those splits plus README.md."""
    root = Path(dataset_dir)
    if not (root / CARD_FILE).is_file() or not (root / PROMPTS_PARQUET).is_file():
        raise UserError(f"{root} is not a built dataset folder (run `negt2ibench build --out {root}` first)")
    splits = image_splits(root)
    if images is not None:
        wanted = list(dict.fromkeys(images))
        unknown = [key for key in wanted if key not in splits]
        if unknown:
            found = ", ".join(splits) or "none"
            raise UserError(f"no image split {', '.join(unknown)} in {root / IMAGES_DIR} (found: {found})")
        files = [root / CARD_FILE] + [path for key in wanted for path in splits[key]]
    else:
        files = [root / CARD_FILE, root / PROMPTS_JSONL, *sorted((root / PROMPTS_DIR).glob("*.parquet"))]
        files += [path for paths in splits.values() for path in paths]
        results = root / RESULTS_DIR
        if results.is_dir():
            files += sorted(p for p in results.rglob("*") if p.is_file())
        listed = [path.relative_to(root).as_posix() for path in files if path.is_file()]
        return listed[:1] + [EVAL_FILE] + listed[1:]
    return [path.relative_to(root).as_posix() for path in files if path.is_file()]


# --------------------------------------------------------------------------- pushing


def push_dataset(
    dataset_dir: str | Path,
    repo_id: str,
    *,
    private: bool = False,
    images: list[str] | None = None,
    dry_run: bool = False,
) -> list[str]:
    """Publish the folder as a Hub dataset repo; returns the repo paths uploaded (or that would be).

    `dry_run` needs neither a token nor the network. A missing token or an unreachable Hub raises
    `UserError` with one line.
    """
    check("--repo-id", repo_id, repo_id_option)
    paths = upload_paths(dataset_dir, images)
    if dry_run:
        return paths

    from huggingface_hub import HfApi

    api = HfApi(token=require_token("push"))
    card.write_card(Path(dataset_dir), repo_id=repo_id)  # the card's loading code names this repo
    if images is None:
        write_eval_yaml(dataset_dir)  # an older build's folder becomes a benchmark too
    with hub_errors(f"push to {repo_id}"):
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(
            repo_id=repo_id,
            repo_type="dataset",
            folder_path=str(dataset_dir),
            allow_patterns=paths,
            commit_message=f"Upload NegT2IBench ({'images: ' + ', '.join(images) if images else 'prompts and card'})",
        )
    return paths


def require_token(action: str) -> str:
    """The Hugging Face token from the usual places (`hf auth login`, HF_TOKEN), or a one-line UserError."""
    from huggingface_hub import get_token

    token = get_token()
    if not token:
        raise UserError(f"no Hugging Face token: run `hf auth login` or set HF_TOKEN, then {action} again")
    return token


@contextlib.contextmanager
def hub_errors(what: str) -> Iterator[None]:
    """Hub calls inside the block fail with one `UserError` line: offline mode, the Hub's refusal
    (its HTTP status and first line), or an unreachable Hub. WHAT says the call ("push to ORG/NAME")."""
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    try:
        yield
    except OfflineModeIsEnabled:
        raise UserError(f"cannot {what} while HF_HUB_OFFLINE=1 is set; unset it and try again") from None
    except HfHubHTTPError as error:
        status = getattr(getattr(error, "response", None), "status_code", None)
        raise UserError(f"could not {what}: the Hub answered HTTP {status} ({str(error).splitlines()[0]})") from None
    except Exception as error:  # noqa: BLE001 - network failures come from httpx, OSError, ...
        if is_network_error(error):
            raise UserError(
                f"cannot reach the Hugging Face Hub ({type(error).__name__}); check the connection"
            ) from None
        raise


def is_network_error(error: BaseException) -> bool:
    """Whether ERROR says the Hub could not be reached (an OSError, or the HTTP client's own error)."""
    if isinstance(error, OSError):
        return True
    return isinstance(error, _http_error())


def _http_error() -> type[Exception]:
    """The error class of the HTTP client huggingface_hub uses (httpx2; httpx in older releases)."""
    try:
        import httpx2
    except ImportError:  # pragma: no cover - older huggingface_hub releases
        import httpx

        return httpx.HTTPError
    return httpx2.HTTPError
