"""GenEval's colour classifier on transformers' CLIP (`openai/clip-vit-large-patch14`: the weights of
open_clip's `ViT-L-14` / `openai`, which GenEval loads).

As GenEval (evaluate_images.py:81-127) and clip_benchmark's `zero_shot_classifier`, which it calls:
the crop is the image composited on the background colour through the mask and cut to the box; per
class name, each colour's three template sentences are embedded, each embedding normalised, the
three averaged and the mean normalised again; a crop's colour is the argmax of 100 × its normalised
image embedding against the ten. The image processor is CLIP's PIL one (bicubic resize of the
shorter side to 224, centre crop), as open_clip's transform. GenEval runs CLIP under fp16 autocast
on CUDA (clip_benchmark's default); this runs float32 on every device.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image


def colour_crop(image: Image.Image, mask: np.ndarray | None, box: Sequence[float], *, bgcolor: str, crop: bool):
    """GenEval's `ImageCrops` item (:95-102): the RGB image through the mask onto `bgcolor` (or the
    image itself for `"original"` or no mask), cut to the box when `crop`."""
    rgb = image.convert("RGB")
    if mask is not None:
        if tuple(rgb.size[::-1]) != tuple(mask.shape):
            raise ValueError(f"mask of shape {mask.shape} for an image of {rgb.size[0]}x{rgb.size[1]} px")
        blank = rgb.copy() if bgcolor == "original" else Image.new("RGB", rgb.size, color=bgcolor)
        rgb = Image.composite(rgb, blank, Image.fromarray(mask))
    return rgb.crop((box[0], box[1], box[2], box[3])) if crop else rgb


class ColorClassifier:
    """CLIP model + tokenizer + PIL image processor; one classifier (10 × D) per class name, cached."""

    def __init__(self, model, tokenizer, image_processor, *, device: torch.device):
        self.model = model.to(device=device, dtype=torch.float32).eval()
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.device = device
        self._classifiers: dict[tuple[str, tuple[str, ...], tuple[str, ...]], torch.Tensor] = {}

    @staticmethod
    def _features(output) -> torch.Tensor:
        # transformers 5 returns an output object from get_*_features; older versions a tensor.
        return output.pooler_output if hasattr(output, "pooler_output") else output

    @torch.inference_mode()
    def classifier(self, classname: str, colors: Sequence[str], templates: Sequence[str]) -> torch.Tensor:
        """(colours × D) unit vectors: per colour the normalised mean of its normalised template embeddings."""
        key = (classname, tuple(colors), tuple(templates))
        if key not in self._classifiers:
            rows = []
            for color in colors:
                texts = [template.format(c=color, classname=classname) for template in templates]
                tokens = self.tokenizer(texts, padding=True, return_tensors="pt").to(self.device)
                embeddings = self._features(self.model.get_text_features(**tokens)).float()
                mean = torch.nn.functional.normalize(embeddings, dim=-1).mean(dim=0)
                rows.append(mean / mean.norm())
            self._classifiers[key] = torch.stack(rows)
        return self._classifiers[key]

    @torch.inference_mode()
    def classify(
        self, crops: Sequence[Image.Image], classname: str, colors: Sequence[str], templates: Sequence[str]
    ) -> list[str]:
        """The colour of each crop of one class (argmax of 100 × cosine against the classifier)."""
        if not crops:
            return []
        pixels = self.image_processor(images=list(crops), return_tensors="pt")["pixel_values"]
        features = self._features(self.model.get_image_features(pixel_values=pixels.to(self.device))).float()
        classifier = self.classifier(classname, colors, templates)
        logits = 100.0 * torch.nn.functional.normalize(features, dim=-1) @ classifier.T
        return [colors[int(index)] for index in logits.argmax(dim=1).tolist()]
