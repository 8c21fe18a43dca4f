"""SigLIP 2 colour / material scores on masked object crops (100 × cosine, averaged over templates).

The crops are cut where the image's pixels are (`masked_crops`: the GPU on one, so only four
integers per crop come to the host) and handed to SigLIP's processor as uint8 tensors; they are
the pixels `masked_crop` cuts from the PIL image, so the scores are the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image

from dataset_builder.vocabulary import CATEGORY_VOCABULARY, MATERIAL_NOUNS
from evaluator.config import EvaluatorConfig
from evaluator.models.inputs import device_kwargs


def masked_crop(image: Image.Image, mask: np.ndarray, gray: int) -> Image.Image:
    """The mask's bounding box cut from the image, pixels outside the mask set to `gray`."""
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    if rows.size == 0:
        return Image.new("RGB", (1, 1), (gray, gray, gray))
    top, bottom, left, right = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    # PIL cuts the box and pastes the mask's pixels onto gray in C: the same pixels as numpy's
    # boolean assignment on a copy of the whole image, about ten times faster.
    crop = Image.new("RGB", (right - left, bottom - top), (gray, gray, gray))
    crop.paste(rgb.crop((left, top, right, bottom)), mask=Image.fromarray(mask[top:bottom, left:right]))
    return crop


def mask_bounds(masks: Sequence[torch.Tensor]) -> list[tuple[int, int, int, int] | None]:
    """(top, bottom, left, right) of each bool H×W mask's pixels (bottom and right exclusive), None
    for an empty mask; computed where the masks are, one copy of 5 integers per mask to the host."""
    if not masks:
        return []
    rows_of = []
    for mask in masks:
        rows, cols = mask.any(dim=1), mask.any(dim=0)
        first_row, first_col = rows.int().argmax(), cols.int().argmax()
        last_row = rows.shape[0] - rows.flip(0).int().argmax()
        last_col = cols.shape[0] - cols.flip(0).int().argmax()
        rows_of.append(torch.stack([rows.any().long(), first_row, last_row, first_col, last_col]))
    values = torch.stack(rows_of).cpu().tolist()
    return [(top, bottom, left, right) if filled else None for filled, top, bottom, left, right in values]


def masked_crops(
    pixels: Sequence[torch.Tensor],
    masks: Sequence[torch.Tensor],
    bounds: Sequence[tuple[int, int, int, int]],
    gray: int,
) -> list[torch.Tensor]:
    """`masked_crop` on tensors: each uint8 3×H×W image cut to its bounds (`mask_bounds`), pixels
    outside its bool H×W mask set to `gray`; made on the device the tensors are on."""
    crops = []
    for image, mask, (top, bottom, left, right) in zip(pixels, masks, bounds, strict=True):
        background = torch.full((), gray, dtype=torch.uint8, device=image.device)
        crops.append(torch.where(mask[top:bottom, left:right], image[:, top:bottom, left:right], background))
    return crops


def attribute_texts(category: str, object_name: str, config: EvaluatorConfig) -> dict[str, list[str]]:
    """Value → its template sentences for one object (lower case, as SigLIP 2 was trained)."""
    if category == "color":
        templates = config.color_templates
    elif category == "material":
        templates = config.material_templates
    else:
        raise ValueError(f"{category!r} has no attribute values")
    return {
        value: [
            template.format(value=value, object=object_name, noun=MATERIAL_NOUNS.get(value, value)).lower()
            for template in templates
        ]
        for value in CATEGORY_VOCABULARY[category]
    }


class AttributeScorer:
    """SigLIP(2) model + processor; text embeddings are computed once per sentence and cached."""

    def __init__(
        self, model, processor, *, device: torch.device, dtype: torch.dtype = torch.float32, max_text_length: int = 64
    ):
        self.model = model.to(device=device, dtype=dtype).eval()
        self.processor = processor
        self.device = device
        self.dtype = dtype
        self.max_text_length = max_text_length
        self._text_cache: dict[str, torch.Tensor] = {}
        self._request_cache: dict[tuple, tuple[list[str], torch.Tensor]] = {}

    @staticmethod
    def _pooled(output) -> torch.Tensor:
        # transformers 5 returns an output object; older versions a tensor.
        return output.pooler_output if hasattr(output, "pooler_output") else output

    @torch.inference_mode()
    def text_embeddings(self, sentences: Sequence[str]) -> torch.Tensor:
        """Unit-norm embeddings (float32, CPU) of the sentences, computing only unseen ones."""
        new = [sentence for sentence in dict.fromkeys(sentences) if sentence not in self._text_cache]
        if new:
            tokens = self.processor(
                text=new, padding="max_length", max_length=self.max_text_length, truncation=True, return_tensors="pt"
            )
            # input_ids only: SigLIP's text tower pools the last position and was trained on padded text
            # without a mask (transformers' SigLIP 2 conversion sets model_input_names=["input_ids"]); the
            # Gemma tokenizer still returns one, and passing it on changes every embedding.
            input_ids = tokens["input_ids"].to(self.device)
            features = self._pooled(self.model.get_text_features(input_ids=input_ids)).float()
            features = torch.nn.functional.normalize(features, dim=-1).cpu()
            for sentence, feature in zip(new, features, strict=False):
                self._text_cache[sentence] = feature
        return torch.stack([self._text_cache[sentence] for sentence in sentences])

    @torch.inference_mode()
    def image_embeddings(self, crops: Sequence[Image.Image | torch.Tensor]) -> torch.Tensor:
        """Unit-norm image embeddings (float32, CPU) of PIL crops or uint8 3×h×w crop tensors."""
        # On a GPU the crops are resized and normalised there (the torchvision image processor's device=).
        options = device_kwargs(self.device)
        if crops and all(isinstance(crop, torch.Tensor) for crop in crops):
            options["input_data_format"] = "channels_first"  # a 3-pixel-wide crop is not channels-last
        pixels = self.processor(images=list(crops), return_tensors="pt", **options)["pixel_values"]
        features = self._pooled(self.model.get_image_features(pixel_values=pixels.to(self.device, self.dtype))).float()
        return torch.nn.functional.normalize(features, dim=-1).cpu()

    def request_texts(self, category: str, object_name: str, config: EvaluatorConfig) -> tuple[list[str], torch.Tensor]:
        """The values of a (category, object) request and its sentences' embeddings (values ×
        templates, in `attribute_texts` order), made once per request and config."""
        templates = config.color_templates if category == "color" else config.material_templates
        key = (category, object_name, templates)
        if key not in self._request_cache:
            texts = attribute_texts(category, object_name, config)
            sentences = [sentence for value in texts for sentence in texts[value]]
            self._request_cache[key] = (list(texts), self.text_embeddings(sentences))
        return self._request_cache[key]

    def score(
        self,
        crops: Sequence[Image.Image | torch.Tensor],
        requests: Sequence[tuple[str, str]],
        config: EvaluatorConfig,
    ) -> list[dict[str, float]]:
        """For each crop and its (category, object name): value → mean over templates of 100 × cosine."""
        if not crops:
            return []
        image_features = self.image_embeddings(crops)
        results = []
        for feature, (category, object_name) in zip(image_features, requests, strict=False):
            values, texts = self.request_texts(category, object_name, config)
            cosines = (texts @ feature).reshape(len(values), -1)
            means = (100.0 * cosines).mean(dim=1)
            results.append({value: float(score) for value, score in zip(values, means, strict=False)})
        return results
