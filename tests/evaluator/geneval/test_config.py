"""GenEval's preset (`evaluator.geneval.config`): its rule constants are GenEval's own defaults, as
djghosh13/geneval's evaluation/evaluate_images.py sets them (values copied here by hand from that
file: lines 84, 101 and 286-290)."""

from __future__ import annotations

from evaluator.geneval.config import GENEVAL, GenEvalConfig


def test_the_rule_constants_are_genevals_defaults():
    # evaluate_images.py:286-290: THRESHOLD 0.3, COUNTING_THRESHOLD 0.9, MAX_OBJECTS 16,
    # NMS_THRESHOLD ('max_overlap') 1.0, POSITION_THRESHOLD 0.1; :84 bgcolor "#999"; :101 crop '1'
    assert (GENEVAL.threshold, GENEVAL.counting_threshold, GENEVAL.max_objects) == (0.3, 0.9, 16)
    assert (GENEVAL.max_overlap, GENEVAL.position_threshold) == (1.0, 0.1)
    assert (GENEVAL.bgcolor, GENEVAL.crop) == ("#999", True)
    assert GenEvalConfig() == GENEVAL
