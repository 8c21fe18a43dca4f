"""The VLM judges of the paper's comparison (Tables 2, 6, 8–10), by key, and their adapters by family.

Data and code are kept apart, as in `generation/registry.py`: `REGISTRY` holds frozen
`JudgeSpec` entries (hub id, family, parameters, dtype), and `ADAPTERS` maps each family to its
adapter class as a lazy ``"module:Class"`` target, imported only when a judge is loaded, so
`negt2ibench judge --list` and `--help` import neither torch nor transformers. Any other chat VLM
with a yes/no vocabulary runs through `custom_spec` (``--model-id``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from negt2ibench.core.errors import UsageError, UserError
from negt2ibench.core.names import SPLIT_NAME, slug
from negt2ibench.core.registry import Registry
from negt2ibench.core.table import Column, Table

# Bump when a template, the yes/no token rule or the record layout changes: it is every judge
# record's `evaluator_version`, so old and new results are never mixed in one file.
JUDGES_VERSION = "judges-1.0.0"

Family = Literal["qwen_vl", "internvl", "vqascore", "auto"]


@dataclass(frozen=True)
class JudgeSpec:
    """One judge: where its weights are, which adapter runs it, and how it is described."""

    key: str  # the record's `evaluator` prefix ("qwen3_vl_8b/pos")
    hub_id: str
    family: Family
    params: str  # parameter count as the paper labels it ("8B")
    dtype: str = "bfloat16"  # on GPU; CPU runs use float32 (bf16 matmuls are slow or missing there)
    revision: str = "main"
    display_name: str = ""
    note: str = ""

    def settings(self, *, mode: str, dtype: str, templates: Mapping[str, str]) -> dict[str, Any]:
        """What a run's answers depend on: hashed into every record's `config_hash`.

        Args:
            mode: the judge mode.
            dtype: the model's dtype.
            templates: the questions' wording (`questions.wording_examples`).

        Returns:
            The hub id, revision, family, mode, dtype and templates (sorted).
        """
        return {
            "hub_id": self.hub_id,
            "revision": self.revision,
            "family": self.family,
            "mode": mode,
            "dtype": dtype,
            "templates": dict(sorted(templates.items())),
        }

    def config_hash(self, *, mode: str, dtype: str, templates: Mapping[str, str]) -> str:
        """The config hash of a run: SHA-256 of its `settings`, as sorted JSON, cut to 16 hex digits.

        Args:
            mode: the judge mode.
            dtype: the model's dtype.
            templates: the questions' wording.

        Returns:
            16 hex digits.
        """
        blob = json.dumps(self.settings(mode=mode, dtype=dtype, templates=templates), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


REGISTRY: Registry[JudgeSpec] = Registry(
    "judge",
    {
        spec.key: spec
        for spec in (
            JudgeSpec("qwen3_vl_8b", "Qwen/Qwen3-VL-8B-Instruct", "qwen_vl", "8B", display_name="Qwen3-VL-8B"),
            JudgeSpec("qwen3_vl_32b", "Qwen/Qwen3-VL-32B-Instruct", "qwen_vl", "32B", display_name="Qwen3-VL-32B"),
            JudgeSpec("qwen2_5_vl_7b", "Qwen/Qwen2.5-VL-7B-Instruct", "qwen_vl", "7B", display_name="Qwen2.5-VL-7B"),
            JudgeSpec("internvl3_8b", "OpenGVLab/InternVL3-8B-hf", "internvl", "8B", display_name="InternVL3-8B"),
            JudgeSpec("internvl3_5_8b", "OpenGVLab/InternVL3_5-8B-HF", "internvl", "8B", display_name="InternVL3.5-8B"),
            JudgeSpec(
                "internvl3_5_38b", "OpenGVLab/InternVL3_5-38B-HF", "internvl", "38B", display_name="InternVL3.5-38B"
            ),
            JudgeSpec(
                "vqascore",
                "zhiqiulin/clip-flant5-xxl",
                "vqascore",
                "11B",
                display_name="VQAScore (CLIP-FlanT5-XXL)",
                note="optional: pip install t2v-metrics",
            ),
        )
    },
    hint=" For any other chat VLM pass --model-id HUB_ID.",
)

# Family → adapter class, imported on first use (transformers / t2v_metrics only then).
ADAPTERS: Registry[type] = Registry(
    "judge family",
    {
        "qwen_vl": "judges.transformers_judge:TransformersJudge",
        "internvl": "judges.transformers_judge:TransformersJudge",
        "auto": "judges.transformers_judge:TransformersJudge",
        "vqascore": "judges.vqascore:VQAScoreJudge",
    },
)


def get_spec(key: str) -> JudgeSpec:
    """The registry entry for KEY.

    Args:
        key: a registered judge's key.

    Returns:
        Its spec.

    Raises:
        UnknownNameError: an unknown key (a one-line error with near matches).
    """
    return REGISTRY[key]


def custom_spec(model_id: str, key: str | None = None, *, revision: str = "main") -> JudgeSpec:
    """A judge for any transformers chat VLM (image-text-to-text with a chat template).

    Args:
        model_id: a Hub repo id (ORG/NAME) or a local model folder.
        key: the judge's key, naming the records' evaluator (default: from the model's name).
        revision: the Hub revision to load.

    Returns:
        The spec, of family `auto`.

    Raises:
        UserError: an empty model id, or a key that is not [a-z0-9_]+.
    """
    if not model_id.strip():
        raise UserError("--model-id needs a Hub repo id (ORG/NAME) or a local model folder")
    if key is None:
        key = slug(model_id.rsplit("/", 1)[-1], fallback="judge")
    if not SPLIT_NAME.match(key):
        raise UserError(f"judge key {key!r} must match [a-z0-9_]+ (it names the records' evaluator)")
    return JudgeSpec(key, model_id, "auto", "?", revision=revision, display_name=model_id)


def chosen_spec(
    key: str | None, *, model_id: str | None, custom_key: str | None, revision: str, flag: str
) -> JudgeSpec:
    """The judge a command line names: a registered `key`, or `model_id` with an optional `custom_key`.

    Args:
        key: a registered judge's key (None: not given).
        model_id: a Hub repo id or local folder of a custom judge.
        custom_key: the custom judge's key.
        revision: the custom judge's revision.
        flag: the option that names a registered judge, for the error.

    Returns:
        The judge's spec.

    Raises:
        UsageError: neither a key nor a model id, or a custom key beside a registered judge.
        UnknownNameError: an unknown key.
        UserError: a custom judge's model id or key refused (`custom_spec`).
    """
    if key:
        if custom_key:
            raise UsageError("--key goes with --model-id (a registered judge's key is its name)")
        return get_spec(key)
    if model_id:
        return custom_spec(model_id, custom_key, revision=revision)
    raise UsageError(f"choose a judge: {flag} KEY (see `negt2ibench judge --list`) or --model-id HUB_ID")


def adapter_class(spec: JudgeSpec) -> type:
    """The adapter class of the spec's family (imported now).

    Args:
        spec: a judge's spec.

    Returns:
        The `JudgeAdapter` subclass.
    """
    return ADAPTERS[spec.family]


def required_adapter_class(spec: JudgeSpec, *, download: bool = False) -> Any:
    """The adapter class of SPEC once its weights and optional library are known to be here.

    A disk look, before torch loads.

    Args:
        spec: a judge's spec.
        download: the weights may be fetched when absent.

    Returns:
        The `JudgeAdapter` subclass.

    Raises:
        MissingWeightsError: the weights are absent (one line naming what to run).
        MissingLibraryError: the judge's optional library is not installed.
    """
    judge_class: Any = adapter_class(spec)  # a JudgeAdapter subclass; each takes its own options
    judge_class.require(spec, download=download)
    return judge_class


def registry_table() -> Table:
    """`judge --list` as a report `Table`.

    Returns:
        One row per registered judge: key, hub id, parameters, family, adapter, note.
    """
    columns = (
        Column("key", "key", str),
        Column("hub_id", "hub id", str),
        Column("params", "params", str),
        Column("family", "family", str),
        Column("adapter", "adapter", str),
        Column("note", "note", str),
    )
    rows = [
        {
            "key": spec.key,
            "hub_id": spec.hub_id,
            "params": spec.params,
            "family": spec.family,
            "adapter": ADAPTERS.target(spec.family),
            "note": spec.note,
        }
        for spec in REGISTRY.values()
    ]
    return Table("judges", "VLM judges", columns, tuple(rows))
