"""Drawing what perception saw (supervision annotators) and tabulating the verdict per statement."""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from dataset_builder.records import PromptRecord
from evaluator.observation import ImageObservation, class_names, confidences
from evaluator.results import ResultRecord, record_verdict


def annotate(image: Image.Image, observation: ImageObservation, result: ResultRecord | None = None) -> Image.Image:
    """A copy of the image with each present object's mask, box and "name confidence" label.

    Draws the observation's detections (`ImageObservation.as_detections`: the instance each
    object uses), the names read from their ``data["class_name"]``, one color per object.
    When a result is given, a PASS / FAIL banner (green / red) is drawn in the top-left corner.
    """
    import supervision as sv

    detections = observation.as_detections()
    # supervision draws on OpenCV's BGR arrays (its colours are written as BGR): an RGB array would
    # get red and blue swapped (a FAIL banner drawn blue).
    scene = np.array(image.convert("RGB"))[:, :, ::-1].copy()
    if len(detections):
        by_object = sv.ColorLookup.INDEX  # every object its own color, even two of one class
        if detections.mask is not None:
            scene = sv.MaskAnnotator(opacity=0.45, color_lookup=by_object).annotate(scene, detections)
        thickness = max(2, round(min(image.size) / 256))
        scene = sv.BoxAnnotator(thickness=thickness, color_lookup=by_object).annotate(scene, detections)
        labels = [
            f"{name} {confidence:.2f}"
            for name, confidence in zip(class_names(detections), confidences(detections), strict=True)
        ]
        scene = sv.LabelAnnotator(
            text_scale=max(0.4, min(image.size) / 1024), smart_position=True, color_lookup=by_object
        ).annotate(scene, detections, labels=labels)
    if result is not None:
        verdict = record_verdict(result)
        scene = sv.draw_text(
            scene,
            verdict.upper(),
            text_anchor=sv.Point(x=40, y=16),
            text_color=sv.Color.WHITE,
            text_scale=0.6,
            background_color=sv.Color.GREEN if verdict == "pass" else sv.Color.RED,
        )
    return Image.fromarray(np.ascontiguousarray(scene[:, :, ::-1]))


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    return str(value)


def statement_table(prompt: PromptRecord, result: ResultRecord) -> list[dict[str, Any]]:
    """One row per statement: index, polarity, statement, verdict, cause, observed, measurements."""
    by_index = {statement.index: statement for statement in prompt.statements}
    rows = []
    for statement_result in sorted(result.statements, key=lambda s: s.index):
        statement = by_index.get(statement_result.index)
        verdict = "pass" if statement_result.satisfied else "fail"
        if statement_result.dead_zone_pass:
            verdict = "pass (dead zone)"
        rows.append(
            {
                "index": statement_result.index,
                "polarity": statement_result.polarity,
                "statement": statement.text if statement is not None else "",
                "verdict": verdict,
                "cause": statement_result.cause or "",
                "observed": ", ".join(statement_result.observed) or "(nothing)",
                "measurements": "; ".join(
                    f"{key}={_format_value(value)}" for key, value in statement_result.measurements.items()
                ),
            }
        )
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """A plain-text table of `statement_table` rows for the terminal."""
    if not rows:
        return "(no statements)"
    columns = list(rows[0])
    widths = {column: max(len(column), *(len(str(row[column])) for row in rows)) for column in columns}
    widths["measurements"] = min(widths.get("measurements", 0), 80)
    lines = ["  ".join(column.ljust(widths[column]) for column in columns)]
    lines.append("  ".join("-" * widths[column] for column in columns))
    for row in rows:
        lines.append("  ".join(str(row[column])[: widths[column]].ljust(widths[column]) for column in columns))
    return "\n".join(lines)
