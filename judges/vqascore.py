"""VQAScore (CLIP-FlanT5-XXL) as a judge, through the optional `t2v-metrics` package.

t2v-metrics pins its own torch/transformers versions and pulls heavy dependencies, so it is not
a requirement of this project: install it (ideally in its own environment) to use this judge.
Each question is passed verbatim (question template "{}"); t2v-metrics returns P("Yes") and,
in a second pass, P("No") over the model's whole vocabulary; p_yes = P(Yes) / (P(Yes) + P(No)),
the same two-answer normalisation the transformers judges use. Timed per pair, not through
t2v-metrics' M×N image-text matrix (the paper's Table 8 notes that matrix inflates its time).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from negt2ibench.core.errors import MissingLibraryError, UserError, brief

from .adapters import JudgeAdapter, pairs_in_batches
from .registry import JudgeSpec


def import_t2v_metrics() -> Any:
    """The `t2v_metrics` module, imported.

    Returns:
        The module.

    Raises:
        MissingLibraryError: t2v-metrics is not installed (exit 2), saying how to install it.
        UserError: it is installed but fails to import.
    """
    try:
        import t2v_metrics
    except ImportError:
        raise MissingLibraryError(
            "VQAScore needs the optional package t2v-metrics: `pip install t2v-metrics` "
            "(best in a separate environment: it pins its own torch and transformers)"
        ) from None
    except Exception as error:  # noqa: BLE001 - t2v_metrics runs checks (ffmpeg) at import time
        raise UserError(f"t2v-metrics is installed but failed to import: {brief(error)}") from None
    return t2v_metrics


class VQAScoreJudge(JudgeAdapter):
    """P("yes") from t2v-metrics' VQAScore model (`spec.hub_id`'s last part is t2v-metrics' model name)."""

    @classmethod
    def require(cls, spec: JudgeSpec, *, download: bool = False) -> None:
        """t2v-metrics must be installed (it fetches its own weights).

        Args:
            spec: the judge's spec.
            download: unused: t2v-metrics fetches its weights itself.

        Raises:
            MissingLibraryError: t2v-metrics is not installed.
            UserError: it fails to import.
        """
        import_t2v_metrics()

    def __init__(self, spec: JudgeSpec, *, device: str = "auto", batch_size: int = 8, dtype: str | None = None):
        from negt2ibench.core.launch import select_device, select_dtype
        from negt2ibench.core.options import check, positive_int

        self.spec = spec
        self.batch_size = check("batch_size", batch_size, positive_int)
        self.device = select_device(device)
        self.dtype_name = dtype or str(select_dtype(self.device, spec.dtype)).removeprefix("torch.")
        self.scorer: Any = None

    def load(self) -> None:
        if self.scorer is not None:
            return
        t2v_metrics = import_t2v_metrics()
        self.scorer = t2v_metrics.VQAScore(model=self.spec.hub_id.rsplit("/", 1)[-1], device=self.device.type)

    def yes_probability(self, images: Sequence[Image.Image], questions: Sequence[str]) -> list[float]:
        """P("yes") for each (image, question) pair: VQAScore's "Yes" against its "No", normalised.

        Args:
            images: one image per question.
            questions: yes/no questions.

        Returns:
            yes / (yes + no) of each pair (0.5 when both are 0).

        Raises:
            ValueError: not one image per question.
        """
        self.load()
        probabilities: list[float] = []
        with tempfile.TemporaryDirectory(prefix="negt2i-vqascore-") as folder:
            for batch_images, batch_questions in pairs_in_batches(images, questions, self.batch_size):
                paths = []
                for number, image in enumerate(batch_images):
                    path = Path(folder) / f"{number}.png"
                    image.convert("RGB").save(path)
                    paths.append(str(path))
                yes = self._answer(paths, batch_questions, "Yes")
                no = self._answer(paths, batch_questions, "No")
                probabilities.extend(y / (y + n) if y + n > 0 else 0.5 for y, n in zip(yes, no, strict=True))
        return probabilities

    def _answer(self, paths: list[str], questions: list[str], answer: str) -> list[float]:
        scores = self.scorer.model.forward(paths, questions, question_template="{}", answer_template=answer)
        return [float(score) for score in scores]
