"""NegationCLIP: the OpenAI-`clip` ViT-L/14 checkpoint becomes SD 1.5's text encoder (converted, cached, plugged in)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from generation.backends import load_generator
from generation.negationclip import (
    NegationCLIPTextEncoder,
    TextEncoderSource,
    choose_source,
    convert_openai_text,
    file_sha256,
    load_text_encoder,
)
from generation.registry import REGISTRY, ModelSpec
from negt2ibench.core.errors import MissingWeightsError, UserError
from tests.helpers.generation_helpers import tiny_sd_pipeline


def weight(model, suffix: str) -> torch.Tensor:
    """The one parameter of MODEL whose name ends with SUFFIX (names differ between transformers 4 and 5)."""
    (found,) = [value for name, value in model.state_dict().items() if name.endswith(suffix)]
    return found


def openai_state_dict(*, vocab: int = 60, context: int = 12, width: int = 128, layers: int = 2, seed: int = 0):
    """A random state dict in OpenAI `clip`'s layout (text tower, plus vision keys that must be ignored)."""
    generator = torch.Generator().manual_seed(seed)

    def normal(*shape, std=0.1):
        return torch.randn(*shape, generator=generator) * std

    state = {
        "token_embedding.weight": normal(vocab, width),
        "positional_embedding": normal(context, width, std=0.05),
        "ln_final.weight": 1 + normal(width),
        "ln_final.bias": normal(width),
        "text_projection": normal(width, 32),
        "logit_scale": torch.tensor(4.6),
        "visual.proj": normal(64, 32),
        "visual.conv1.weight": normal(64, 3, 4, 4),
    }
    for index in range(layers):
        block = f"transformer.resblocks.{index}."
        state |= {
            f"{block}attn.in_proj_weight": normal(3 * width, width),
            f"{block}attn.in_proj_bias": normal(3 * width),
            f"{block}attn.out_proj.weight": normal(width, width),
            f"{block}attn.out_proj.bias": normal(width),
            f"{block}ln_1.weight": 1 + normal(width),
            f"{block}ln_1.bias": normal(width),
            f"{block}ln_2.weight": 1 + normal(width),
            f"{block}ln_2.bias": normal(width),
            f"{block}mlp.c_fc.weight": normal(4 * width, width),
            f"{block}mlp.c_fc.bias": normal(4 * width),
            f"{block}mlp.c_proj.weight": normal(width, 4 * width),
            f"{block}mlp.c_proj.bias": normal(width),
        }
    return state


def openai_text_forward(state, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """OpenAI CLIP's `encode_text` up to `ln_final` (and its end-of-text pooling), in plain torch ops."""
    width = state["token_embedding.weight"].shape[1]
    heads = width // 64
    layers = len({key.split(".")[2] for key in state if key.startswith("transformer.resblocks.")})
    length = ids.shape[1]
    causal = torch.full((length, length), float("-inf")).triu(1)

    def layer_norm(x, prefix):
        return torch.nn.functional.layer_norm(x, (width,), state[f"{prefix}.weight"], state[f"{prefix}.bias"], 1e-5)

    x = state["token_embedding.weight"][ids] + state["positional_embedding"][:length]
    for index in range(layers):
        block = f"transformer.resblocks.{index}."
        h = layer_norm(x, f"{block}ln_1")
        q, k, v = (h @ state[f"{block}attn.in_proj_weight"].T + state[f"{block}attn.in_proj_bias"]).chunk(3, dim=-1)

        def split(t):
            return t.reshape(t.shape[0], length, heads, width // heads).transpose(1, 2)

        scores = split(q) @ split(k).transpose(-1, -2) / (width // heads) ** 0.5 + causal
        attended = (scores.softmax(-1) @ split(v)).transpose(1, 2).reshape(ids.shape[0], length, width)
        x = x + attended @ state[f"{block}attn.out_proj.weight"].T + state[f"{block}attn.out_proj.bias"]
        h = layer_norm(x, f"{block}ln_2") @ state[f"{block}mlp.c_fc.weight"].T + state[f"{block}mlp.c_fc.bias"]
        h = h * torch.sigmoid(1.702 * h)  # QuickGELU
        x = x + h @ state[f"{block}mlp.c_proj.weight"].T + state[f"{block}mlp.c_proj.bias"]
    x = layer_norm(x, "ln_final")
    return x, x[torch.arange(ids.shape[0]), ids.argmax(dim=-1)]


def test_converted_text_model_computes_the_openai_text_forward():
    state = openai_state_dict()
    model = convert_openai_text(state)
    config = model.config
    assert (config.hidden_size, config.num_attention_heads, config.num_hidden_layers) == (128, 2, 2)
    assert (config.intermediate_size, config.max_position_embeddings, config.vocab_size) == (512, 12, 60)
    assert (config.hidden_act, config.eos_token_id) == ("quick_gelu", 59)
    ids = torch.tensor([[58, 5, 17, 33, 59, 0, 0, 0, 0, 0, 0, 0], [58, 40, 2, 9, 11, 21, 8, 59, 59, 59, 59, 59]])
    expected_hidden, expected_pooled = openai_text_forward(state, ids)
    with torch.no_grad():
        output = model(input_ids=ids)
    np.testing.assert_allclose(output.last_hidden_state.numpy(), expected_hidden.numpy(), atol=2e-5, rtol=1e-5)
    np.testing.assert_allclose(output.pooler_output.numpy(), expected_pooled.numpy(), atol=2e-5, rtol=1e-5)


def test_conversion_unwraps_saved_wrappers_and_refuses_other_layouts():
    state = openai_state_dict(width=64, layers=1)
    wrapped = {"state_dict": {f"module.{key}": value for key, value in state.items()}}
    plain, unwrapped = convert_openai_text(state), convert_openai_text(wrapped)
    for (name, a), (_, b) in zip(plain.state_dict().items(), unwrapped.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    with pytest.raises(UserError, match="not an OpenAI CLIP state dict.*keys: (text_model.)?embeddings"):
        convert_openai_text(plain.state_dict())


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            ["README.md", "ViT-B-32/best_model_epoch_3.pth", "ViT-L-14/best_model_epoch_5.pth", "ViT-L-14@336px/b.pth"],
            TextEncoderSource("openai", "ViT-L-14/best_model_epoch_5.pth"),
        ),
        (["negationclip_vitl14.pt", "negationclip_vitb32.pt"], TextEncoderSource("openai", "negationclip_vitl14.pt")),
        (["NegationCLIP_ViT_L_14.safetensors"], TextEncoderSource("openai", "NegationCLIP_ViT_L_14.safetensors")),
        (
            ["negationclip_L14.pth", "negationclip_B32.pth", "best_model_epoch_14.pth"],
            TextEncoderSource("openai", "negationclip_L14.pth"),
        ),
        (
            ["clip-vit-large-patch14-negation.pt", "clip-vit-large-patch14-336.pt"],
            TextEncoderSource("openai", "clip-vit-large-patch14-negation.pt"),
        ),
        (
            ["README.md", "text_encoder/config.json", "text_encoder/model.safetensors"],
            TextEncoderSource("transformers", "text_encoder"),
        ),
        (["config.json", "model.safetensors", "ViT-L-14.pth"], TextEncoderSource("transformers", "")),
        (
            [
                "vit-b-16/config.json",
                "vit-b-16/model.safetensors",
                "vit-l-14/config.json",
                "vit-l-14/model.safetensors",
            ],
            TextEncoderSource("transformers", "vit-l-14"),
        ),
    ],
)
def test_the_vit_l14_text_encoder_is_picked_by_name(files, expected):
    assert choose_source(files) == expected


def test_unknown_or_ambiguous_layouts_are_one_line_errors_listing_the_files():
    with pytest.raises(UserError) as unknown:
        choose_source(["README.md", "weights.bin", "ViT-B-16.pth"], "jerryray/negationclip")
    message = str(unknown.value)
    assert message == (
        "jerryray/negationclip: no ViT-L/14 NegationCLIP checkpoint in a layout this loader knows "
        "(files: README.md, ViT-B-16.pth, weights.bin)"
    )
    with pytest.raises(UserError, match=r"several ViT-L/14 checkpoints.*\(ViT-L-14/e1.pth, ViT-L-14/e2.pth\)$"):
        choose_source(["ViT-L-14/e2.pth", "ViT-L-14/e1.pth"])


def test_loaded_once_converted_and_then_read_from_the_cache(tmp_path, monkeypatch):
    state = openai_state_dict(width=64, layers=1)
    repo = tmp_path / "negationclip"
    (repo / "ViT-L-14").mkdir(parents=True)
    (repo / "ViT-B-32").mkdir()
    torch.save(state, repo / "ViT-L-14" / "best_model_epoch_4.pth")
    torch.save(openai_state_dict(width=64, layers=1, seed=1), repo / "ViT-B-32" / "best_model_epoch_2.pth")
    monkeypatch.setenv("NEGT2I_HOME", str(tmp_path / "home"))
    model = NegationCLIPTextEncoder.from_pretrained(str(repo), dtype=torch.float32)
    assert torch.equal(weight(model, "token_embedding.weight"), state["token_embedding.weight"])
    digest = file_sha256(repo / "ViT-L-14" / "best_model_epoch_4.pth")
    folder = tmp_path / "home" / "converted" / f"negationclip-text-{digest[:16]}"
    assert json.loads((folder / "source.json").read_text())["file"] == "ViT-L-14/best_model_epoch_4.pth"

    def no_reading(*args, **kwargs):
        raise AssertionError("the checkpoint was read again")

    monkeypatch.setattr("generation.negationclip.read_state_dict", no_reading)
    again = load_text_encoder(str(repo), dtype=torch.bfloat16)
    assert again.dtype == torch.bfloat16
    assert torch.equal(weight(again, "final_layer_norm.bias").float(), state["ln_final.bias"].bfloat16().float())


def test_a_transformers_folder_in_the_repo_is_loaded_as_it_is(tmp_path):
    text_model = convert_openai_text(openai_state_dict(width=64, layers=1, seed=3))
    text_model.save_pretrained(tmp_path / "repo" / "text_encoder")
    loaded = load_text_encoder(str(tmp_path / "repo"), converted_dir=tmp_path / "unused")
    assert torch.equal(
        weight(loaded, "position_embedding.weight"),
        weight(text_model, "position_embedding.weight"),
    )
    assert not (tmp_path / "unused").exists()


def test_the_hub_repo_offline_and_not_cached_is_missing_weights(tmp_path):
    with pytest.raises(MissingWeightsError, match="NegationCLIP \\(jerryray/negationclip\\)") as missing:
        NegationCLIPTextEncoder.from_pretrained("jerryray/negationclip", cache_dir=tmp_path)
    assert missing.value.exit_code == 2 and "hf download jerryray/negationclip" in str(missing.value)


def _sd_folder(tmp_path, text_width: int):
    folder = tmp_path / f"sd-{text_width}"
    tiny_sd_pipeline(text_width=text_width).save_pretrained(folder)
    return folder


def _negationclip_spec(sd_folder, repo) -> ModelSpec:
    registered = REGISTRY["sd_1_5_negationclip"]
    class_path, hub_repo, subfolder = registered.component_overrides["text_encoder"]
    assert (class_path, hub_repo, subfolder) == (
        "generation.negationclip.NegationCLIPTextEncoder",
        "jerryray/negationclip",
        None,
    )
    return ModelSpec(
        key="sd_negationclip_tiny",
        hub_id=str(sd_folder),
        pipeline_class=registered.pipeline_class,
        steps=2,
        height=32,
        width=32,
        guidance=7.5,
        dtype="float32",
        component_overrides={"text_encoder": (class_path, str(repo), None)},
    )


@pytest.mark.slow
def test_sd15_pipeline_gets_the_converted_text_encoder(tmp_path, monkeypatch):
    monkeypatch.setenv("NEGT2I_HOME", str(tmp_path / "home"))
    sd_folder = _sd_folder(tmp_path, text_width=64)
    vocab = 82  # the tiny CLIP tokenizer's size
    state = openai_state_dict(vocab=vocab, context=77, width=64, layers=1, seed=5)
    repo = tmp_path / "negationclip"
    repo.mkdir()
    torch.save(state, repo / "negationclip_ViT-L-14.pth")
    generator = load_generator(_negationclip_spec(sd_folder, repo), "cpu")
    encoder = generator.pipeline.text_encoder
    assert torch.equal(weight(encoder, "token_embedding.weight"), state["token_embedding.weight"])
    images = generator(["a red cup"], [7])
    assert images[0].image.size == (32, 32)
    again = generator(["a red cup"], [7])
    np.testing.assert_array_equal(np.asarray(images[0].image), np.asarray(again[0].image))


def test_a_text_encoder_of_the_wrong_width_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("NEGT2I_HOME", str(tmp_path / "home"))
    sd_folder = _sd_folder(tmp_path, text_width=64)
    repo = tmp_path / "negationclip"
    repo.mkdir()
    torch.save(openai_state_dict(vocab=82, context=77, width=128, layers=1), repo / "ViT-L-14.pth")
    with pytest.raises(UserError, match="hidden size 128, but the UNet .* attends to 64: wrong CLIP size"):
        load_generator(_negationclip_spec(sd_folder, repo), "cpu")
