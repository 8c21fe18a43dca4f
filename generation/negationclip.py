"""NegationCLIP's text encoder for SD 1.5: an OpenAI-`clip` checkpoint turned into transformers' `CLIPTextModel`.

`jerryray/negationclip` (Park et al., "Know 'No' Better", ICCV 2025) holds fine-tuned CLIP models
as the authors' training script saves them: `torch.save(model.state_dict(), ...)` of an OpenAI
`clip.load(...)` model, one per ViT size (B/32, B/16, L/14, L/14@336px). SD 1.5's text encoder is
the ViT-L/14 text tower, so that is the file used. Its text keys are converted as transformers'
own CLIP conversion script (`convert_clip_original_pytorch_to_hf.py`) maps them, the result is
saved once per checkpoint (keyed by the file's SHA-256) under `NEGT2I_HOME/converted/`, and later
runs load that folder. A repo that holds a transformers folder instead is loaded as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from negt2ibench.core.atomic import atomic_folder
from negt2ibench.core.errors import MissingWeightsError, UserError

NEGATIONCLIP_REPO = "jerryray/negationclip"
CHECKPOINT_SUFFIXES = (".pth", ".pt", ".bin", ".ckpt", ".safetensors")
TRANSFORMERS_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json")
# "ViT-L-14" (the training script names its folder after --clip_model), "ViT-L/14", "vit_l_14", "vitl14", "L14",
# "clip-vit-large-patch14"; the @336px model is excluded separately.
VIT_L14 = re.compile(r"(?:^|[^a-z])(?:vit[-_ ]?)?l[-_/ ]?14(?![0-9])|large[-_ ]?patch[-_ ]?14(?![0-9])", re.IGNORECASE)
OPENAI_TEXT_KEYS = ("token_embedding.weight", "positional_embedding", "ln_final.weight", "ln_final.bias")
HOW_TO_GET = (
    "Run the same `negt2ibench generate` with --download on a machine with internet access (or "
    "`hf download jerryray/negationclip` there), or pass a local folder holding the checkpoint."
)


@dataclass(frozen=True)
class TextEncoderSource:
    """Where the text encoder is in the repo: a transformers folder ("" = the root) or an OpenAI checkpoint file."""

    kind: Literal["transformers", "openai"]
    path: str


def _is_l14(path: str) -> bool:
    return bool(VIT_L14.search(path)) and "336" not in path


def choose_source(files: Sequence[str], repo: str = NEGATIONCLIP_REPO) -> TextEncoderSource:
    """The ViT-L/14 text encoder among a repo's files, or a one-line `UserError` listing what is there."""
    listed = ", ".join(sorted(files)) or "none"
    present = set(files)
    found: set[str] = set()
    for name in files:
        path = PurePosixPath(name)
        parent = "" if str(path.parent) == "." else str(path.parent)
        if path.name in TRANSFORMERS_WEIGHTS and str(PurePosixPath(parent, "config.json")) in present:
            found.add(parent)
    folders = sorted(found)
    if folders:
        chosen = folders if len(folders) == 1 else [folder for folder in folders if _is_l14(folder)]
        if len(chosen) == 1:
            return TextEncoderSource("transformers", chosen[0])
        raise UserError(f"{repo}: cannot tell which transformers folder is the ViT-L/14 text encoder (files: {listed})")
    checkpoints = [name for name in files if name.lower().endswith(CHECKPOINT_SUFFIXES) and _is_l14(name)]
    if len(checkpoints) == 1:
        return TextEncoderSource("openai", checkpoints[0])
    if checkpoints:
        raise UserError(
            f"{repo}: several ViT-L/14 checkpoints, cannot tell which to use ({', '.join(sorted(checkpoints))})"
        )
    raise UserError(f"{repo}: no ViT-L/14 NegationCLIP checkpoint in a layout this loader knows (files: {listed})")


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def repo_files(repo: str, *, cache_dir: str | Path | None = None, download: bool = True) -> list[str]:
    """The repo's file paths: a local folder's files, the Hub's listing (DOWNLOAD and online), or the
    cached snapshot's."""
    if Path(repo).is_dir():
        root = Path(repo)
        return sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file())
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    if download and not _offline():
        try:
            return sorted(HfApi().list_repo_files(repo))
        except (HfHubHTTPError, OSError):
            pass  # no network after all: what the cache holds
    try:
        folder = Path(snapshot_download(repo, cache_dir=cache_dir, local_files_only=True))
    except (LocalEntryNotFoundError, OSError) as error:
        raise MissingWeightsError(f"NegationCLIP ({repo})", type(error).__name__, how_to_get=HOW_TO_GET) from None
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())


def fetch_file(repo: str, filename: str, *, cache_dir: str | Path | None = None, download: bool = True) -> Path:
    """The local path of one repo file (downloaded when DOWNLOAD, unless offline or already cached)."""
    if Path(repo).is_dir():
        return Path(repo) / filename
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        return Path(hf_hub_download(repo, filename, cache_dir=cache_dir, local_files_only=not download))
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as error:
        raise MissingWeightsError(
            f"NegationCLIP ({repo}/{filename})", type(error).__name__, how_to_get=HOW_TO_GET
        ) from None


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file; a Hub cache blob is named by it already (LFS files), so it is not re-read."""
    resolved = Path(path).resolve()
    if re.fullmatch(r"[0-9a-f]{64}", resolved.name):
        return resolved.name
    digest = hashlib.sha256()
    with resolved.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_state_dict(path: str | Path) -> dict[str, Any]:
    """Tensors of a `.safetensors` file or a `torch.save`d state dict (weights only: no code runs)."""
    path = Path(path)
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return dict(load_file(str(path)))
        import torch

        return torch.load(str(path), map_location="cpu", weights_only=True, mmap=True)
    except Exception as error:  # noqa: BLE001 - pickle, zip and safetensors raise many kinds: one line
        raise UserError(f"cannot read {path.name} as a state dict: {type(error).__name__}: {error}") from None


def openai_text_state_dict(raw: Mapping[str, Any], *, source: str = "the checkpoint") -> dict[str, Any]:
    """The OpenAI-`clip` keys of a state dict, unwrapped from {"state_dict": ...} and "module." prefixes."""
    state = dict(raw)
    for wrapper in ("state_dict", "model_state_dict", "model"):
        if isinstance(state.get(wrapper), Mapping):
            state = dict(state[wrapper])
            break
    for prefix in ("module.", "model."):
        if state and all(key.startswith(prefix) for key in state):
            state = {key[len(prefix) :]: value for key, value in state.items()}
    missing = [key for key in OPENAI_TEXT_KEYS if key not in state]
    if missing or not any(key.startswith("transformer.resblocks.") for key in state):
        shown = ", ".join(list(state)[:5])
        raise UserError(
            f"{source} is not an OpenAI CLIP state dict (no {', '.join(missing) or 'resblocks'}; keys: {shown}, ...)"
        )
    return state


def convert_openai_text(state: Mapping[str, Any], *, num_attention_heads: int | None = None):
    """transformers' `CLIPTextModel` with the text tower of an OpenAI-`clip` state dict.

    The shapes give the architecture as OpenAI's `build_model` reads it (heads = width // 64 unless
    given); the keys map as transformers' CLIP conversion does: the fused `attn.in_proj_*` split into
    q/k/v, `mlp.c_fc`/`c_proj` → `fc1`/`fc2`, `ln_1`/`ln_2` → `layer_norm1`/`2`, `ln_final` →
    `final_layer_norm`. `text_projection` is not part of `CLIPTextModel` (SD 1.5 does not use it).
    """
    import torch
    from transformers import CLIPTextConfig, CLIPTextModel

    state = openai_text_state_dict(state)
    vocab_size, width = state["token_embedding.weight"].shape
    layers = sorted({int(key.split(".")[2]) for key in state if key.startswith("transformer.resblocks.")})
    if layers != list(range(len(layers))):
        raise UserError(f"the checkpoint's text blocks are not numbered 0..N-1: {layers}")
    heads = num_attention_heads or width // 64
    config = CLIPTextConfig(
        vocab_size=vocab_size,
        hidden_size=width,
        intermediate_size=state["transformer.resblocks.0.mlp.c_fc.weight"].shape[0],
        num_hidden_layers=len(layers),
        num_attention_heads=heads,
        max_position_embeddings=state["positional_embedding"].shape[0],
        hidden_act="quick_gelu",
        layer_norm_eps=1e-5,
        projection_dim=state["text_projection"].shape[1] if "text_projection" in state else width,
        bos_token_id=vocab_size - 2,  # OpenAI's <|startoftext|> and <|endoftext|> are the last two ids
        eos_token_id=vocab_size - 1,
        pad_token_id=1,
    )
    converted = {
        "embeddings.token_embedding.weight": state["token_embedding.weight"],
        "embeddings.position_embedding.weight": state["positional_embedding"],
        "final_layer_norm.weight": state["ln_final.weight"],
        "final_layer_norm.bias": state["ln_final.bias"],
    }
    for index in layers:
        old, new = f"transformer.resblocks.{index}.", f"encoder.layers.{index}."
        for kind in ("weight", "bias"):
            for part, name in zip(state[f"{old}attn.in_proj_{kind}"].chunk(3, dim=0), ("q", "k", "v"), strict=True):
                converted[f"{new}self_attn.{name}_proj.{kind}"] = part
            converted[f"{new}self_attn.out_proj.{kind}"] = state[f"{old}attn.out_proj.{kind}"]
            converted[f"{new}layer_norm1.{kind}"] = state[f"{old}ln_1.{kind}"]
            converted[f"{new}layer_norm2.{kind}"] = state[f"{old}ln_2.{kind}"]
            converted[f"{new}mlp.fc1.{kind}"] = state[f"{old}mlp.c_fc.{kind}"]
            converted[f"{new}mlp.fc2.{kind}"] = state[f"{old}mlp.c_proj.{kind}"]
    model = CLIPTextModel(config).eval()
    # transformers 5 keeps the text transformer's modules at the top of CLIPTextModel; 4.x nests them in `text_model`.
    prefix = "text_model." if any(key.startswith("text_model.") for key in model.state_dict()) else ""
    converted = {prefix + key: value.detach().to(torch.float32).contiguous() for key, value in converted.items()}
    missing, unexpected = model.load_state_dict(converted, strict=False)
    missing = [key for key in missing if not key.endswith("position_ids")]
    if missing or unexpected:
        raise UserError(
            f"converted text encoder does not fit CLIPTextModel (missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    return model


def converted_root() -> Path:
    """Where converted text encoders are kept: `$NEGT2I_HOME/converted` (default ~/.cache/negt2ibench)."""
    home = os.environ.get("NEGT2I_HOME") or Path.home() / ".cache" / "negt2ibench"
    return Path(home) / "converted"


def load_text_encoder(
    repo: str = NEGATIONCLIP_REPO,
    *,
    dtype: Any = None,
    cache_dir: str | Path | None = None,
    converted_dir: str | Path | None = None,
    download: bool = True,
):
    """NegationCLIP's ViT-L/14 text encoder as a `CLIPTextModel` (converted once, then loaded from disk).

    Args:
        repo: a Hub repo id or a local folder with the same files.
        dtype: the torch dtype to load in (default float32).
        cache_dir: Hugging Face cache to use (default: the usual one).
        converted_dir: where converted models are kept (default `converted_root()`).
        download: fetch what is not on this machine from the Hub (False: local files only).

    Raises:
        MissingWeightsError: the repo or the file is not on this machine and cannot be downloaded.
        UserError: the repo holds no ViT-L/14 text encoder in a known layout (the message lists its files).
    """
    from transformers import CLIPTextModel

    source = choose_source(repo_files(repo, cache_dir=cache_dir, download=download), repo)
    if source.kind == "transformers":
        if Path(repo).is_dir():
            return CLIPTextModel.from_pretrained(Path(repo) / source.path, dtype=dtype)
        return CLIPTextModel.from_pretrained(
            repo, subfolder=source.path or None, cache_dir=cache_dir, dtype=dtype, local_files_only=not download
        )
    checkpoint = fetch_file(repo, source.path, cache_dir=cache_dir, download=download)
    digest = file_sha256(checkpoint)
    folder = Path(converted_dir or converted_root()) / f"negationclip-text-{digest[:16]}"
    if not (folder / "config.json").is_file():
        model = convert_openai_text(read_state_dict(checkpoint))
        with atomic_folder(folder) as staging:
            model.save_pretrained(staging)
            source_record = {"repo": repo, "file": source.path, "sha256": digest}
            (staging / "source.json").write_text(json.dumps(source_record, indent=1) + "\n", encoding="utf-8")
    return CLIPTextModel.from_pretrained(folder, dtype=dtype)


class NegationCLIPTextEncoder:
    """The registry's loader for NegationCLIP: `from_pretrained(repo, dtype=...)`, as diffusers components load."""

    @classmethod
    def from_pretrained(
        cls, repo: str = NEGATIONCLIP_REPO, *, dtype: Any = None, subfolder: str | None = None, **kwargs
    ):
        """A `CLIPTextModel` for SD 1.5's `text_encoder` slot (see `load_text_encoder`)."""
        if subfolder:
            repo = str(Path(repo) / subfolder) if Path(repo).is_dir() else repo
        download = not kwargs.get("local_files_only", False)  # as diffusers passes it to its components
        return load_text_encoder(repo, dtype=dtype, cache_dir=kwargs.get("cache_dir"), download=download)
