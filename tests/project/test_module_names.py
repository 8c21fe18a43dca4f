"""A module's file name says what it holds without its package: no two modules of `leaderboard/` and
`space/` share a file name, with each other or with any other module of the eight product packages
(`__init__.py` and `cli.py` excepted), so `score_views.py`, not a seventh `views.py`, and
`verified_entries.py` beside `leaderboard/store/entries.py`."""

from __future__ import annotations

from pathlib import Path

from tests.project.test_layers import CLEAN, PACKAGES, ROOT, _plant

SHARED_NAMES = ("__init__.py", "cli.py")  # a package's marker and its command module, in every part
NAMED_APART = ("leaderboard", "space")  # the packages whose every module's name is its own


def name_clashes(root: Path) -> list[str]:
    """Each file name that a module of `leaderboard/` or `space/` shares with another module of the
    eight packages, with the modules that bear it."""
    by_name: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if path.name not in SHARED_NAMES:
                by_name.setdefault(path.name, []).append(path.relative_to(root).as_posix())
    return [
        f"{name}: {', '.join(paths)}"
        for name, paths in sorted(by_name.items())
        if len(paths) > 1 and any(path.split("/")[0] in NAMED_APART for path in paths)
    ]


def test_no_module_of_leaderboard_or_space_shares_its_name():
    assert len(list((ROOT / "space").rglob("*.py"))) > 30 and len(list((ROOT / "leaderboard").rglob("*.py"))) > 30
    assert name_clashes(ROOT) == []


def test_the_check_passes_a_planted_tree_whose_only_shared_names_are_allowed(tmp_path):
    planted = CLEAN | {
        "evaluator/config.py": "X = 1\n",  # two configs, neither in leaderboard/ nor space/
        "evaluator/geneval/config.py": "X = 1\n",
        "leaderboard/cli.py": "X = 1\n",  # cli.py and __init__.py are in every part
        "leaderboard/store/__init__.py": "",
        "space/tabs/score/__init__.py": "",
        "space/tabs/score/score_views.py": "X = 1\n",
        "space/tabs/submit/submit_views.py": "X = 1\n",
    }
    assert name_clashes(_plant(tmp_path, planted)) == []


def test_the_check_finds_each_planted_shared_name(tmp_path):
    planted = CLEAN | {
        "space/tabs/score/views.py": "X = 1\n",  # two tabs' views.py
        "space/tabs/submit/views.py": "X = 1\n",
        "leaderboard/store/entries.py": "X = 1\n",  # the store's and the Space's entries.py
        "space/gallery/entries.py": "X = 1\n",
        "evaluator/geneval/scoring.py": "X = 1\n",  # a name of the Space's that another package has
        "space/scoring.py": "X = 1\n",
    }
    assert name_clashes(_plant(tmp_path, planted)) == [
        "entries.py: leaderboard/store/entries.py, space/gallery/entries.py",
        "scoring.py: evaluator/geneval/scoring.py, space/scoring.py",
        "views.py: space/tabs/score/views.py, space/tabs/submit/views.py",
    ]
