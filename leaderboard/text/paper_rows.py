"""The paper's reported rows: Table 3 of the NegT2IBench paper, copied, not scored here.

They are shown beside the ranked entries (`leaderboard.store.ranking`), and their names are reserved: no
submission may take one, nor a name that looks like one (`leaderboard.text.submitted_names.name_problem`).
"""

from __future__ import annotations

from typing import Any

# The paper's rows cite the paper (no address is published yet, so none is invented).
PAPER_CITATION = "Elfatairy, Bravo, Bader, Akata (2026), NegT2IBench, Table 3"

# Table 3 of the NegT2IBench paper: the rows whose numbers the paper's text gives.
PAPER_ROWS: tuple[dict[str, Any], ...] = (
    {
        "model": "SD 1.5",
        "1:0": 36.1,
        "0:1": 44.1,
        "2:0": 7.3,
        "1:1": 9.7,
        "0:2": 14.0,
        "2:1": 1.8,
        "1:2": 2.4,
        "2:2": 0.5,
        "color": 27.7,
        "material": 22.8,
        "comparative": 8.9,
        "depth": 8.8,
        "directional": 9.6,
        "proximity": 9.1,
        "overall": 14.5,
    },
    {
        "model": "SD 1.5 + NegationCLIP",
        "1:0": 35.7,
        "0:1": 44.3,
        "2:0": 8.8,
        "1:1": 9.6,
        "0:2": 15.5,
        "2:1": 1.8,
        "1:2": 3.0,
        "2:2": 0.5,
        "color": 28.3,
        "material": 23.9,
        "comparative": 8.4,
        "depth": 9.4,
        "directional": 10.0,
        "proximity": 9.2,
        "overall": 14.9,
    },
)
