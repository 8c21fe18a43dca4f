"""The layers of docs/architecture.md, checked on the source: every import of the eight packages
(at module level or inside a function, `TYPE_CHECKING` blocks and lazy ``"module:Name"`` registry
targets included) goes to the module's own layer or a lower one, and no import cycle exists.

Lowest first: the foundation (`negt2ibench.core`) → the corpus (`dataset_builder`) → `generation` |
`evaluator` (never each other) → `judges` → `validation` → the Python API (`negt2ibench.api`,
`negt2ibench.inputs`) → the leaderboard's back end (`leaderboard`, no gradio) → the Space (`space`, the UI)
→ the shells (every `cli.py` and `*_cli.py`,
`negt2ibench/cli.py`, `negt2ibench/__init__.py`, `negt2ibench/__main__.py`). Only shells import shells.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("negt2ibench", "dataset_builder", "generation", "evaluator", "judges", "validation", "leaderboard", "space")
# Layer → its rank; two layers of one rank (generation, evaluator) may not import each other.
RANKS = {
    "core": 0,
    "dataset_builder": 1,
    "generation": 2,
    "evaluator": 2,
    "judges": 3,
    "validation": 4,
    "api": 5,
    "leaderboard": 6,
    "space": 7,
    "shells": 8,
}
SHELLS = ("negt2ibench", "negt2ibench.cli", "negt2ibench.__main__", "negt2ibench.reward_server")
API = (
    "negt2ibench.api",
    "negt2ibench.inputs",
    "negt2ibench.geneval_api",
    "negt2ibench.reward",
    "negt2ibench.reward_pickle",
    "negt2ibench.reward_body",
    "negt2ibench.reward_audit",
)
LAZY_TARGET = re.compile(r"^([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+):[A-Za-z_][A-Za-z0-9_]*$")


def layer_of(module: str) -> str:
    """The layer of a project module (by its dotted name)."""
    last = module.rsplit(".", 1)[-1]
    if module in SHELLS or last == "cli" or last.endswith("_cli"):
        return "shells"
    if module in API:
        return "api"
    if module == "negt2ibench.core" or module.startswith("negt2ibench.core."):
        return "core"
    package = module.split(".", 1)[0]
    if package == "negt2ibench":
        raise AssertionError(f"{module}: a module of negt2ibench/ outside core/ that is not the API or a shell")
    return package


def project_modules(root: Path) -> dict[str, Path]:
    """Dotted name → file, for every module of the eight packages under ROOT."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _targets(module: str, path: Path, node: ast.AST, modules: dict[str, Path]) -> list[str]:
    """The project modules one import statement (or lazy target string) reaches."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            origin = ".".join(base + ([node.module] if node.module else []))
        else:
            origin = node.module or ""
        names = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in modules else origin for alias in node.names]
    else:  # a "module:Name" string constant
        names = [LAZY_TARGET.match(node.value)[1]]
    found = []
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.append(name)
    return found


def import_edges(root: Path, *, lazy_targets: bool = True) -> dict[str, set[str]]:
    """Module → the project modules it imports, anywhere in its file; with `lazy_targets`, also the
    modules its ``"module:Name"`` strings name (a registry imports them on first use)."""
    modules = project_modules(root)
    edges: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges[module] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            lazy = lazy_targets and isinstance(node, ast.Constant) and isinstance(node.value, str)
            lazy = lazy and LAZY_TARGET.match(node.value)
            if isinstance(node, (ast.Import, ast.ImportFrom)) or lazy:
                edges[module].update(_targets(module, path, node, modules))
    return edges


def layer_violations(edges: dict[str, set[str]]) -> list[str]:
    """Every import that goes up, or sideways between generation and evaluator."""
    found = []
    for module, targets in sorted(edges.items()):
        source = layer_of(module)
        for target in sorted(targets):
            goal = layer_of(target)
            if goal != source and RANKS[goal] >= RANKS[source]:
                found.append(f"{module} ({source}) imports {target} ({goal})")
    return found


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted.

    A module's import of its own package or an ancestor package is left out: Python runs a
    package's `__init__` before any of its modules anyway, so such an edge adds no order."""
    graph = {
        module: {t for t in targets if not (module.startswith(t + ".") and t in edges)}
        for module, targets in edges.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def test_every_import_stays_in_its_layer_or_goes_down():
    edges = import_edges(ROOT)
    assert len(edges) > 100  # the eight packages were read
    assert layer_violations(edges) == []


def test_no_import_cycles():
    # A lazy registry target is resolved on first use, after every module has loaded, so it adds no
    # import order (a plug-in names the registry it joins, and the registry names the plug-in).
    assert import_cycles(import_edges(ROOT, lazy_targets=False)) == []


def test_the_layers_are_the_documented_ones():
    assert layer_of("negt2ibench.core.errors") == "core" and layer_of("negt2ibench.core") == "core"
    assert layer_of("negt2ibench.api") == layer_of("negt2ibench.inputs") == "api"
    assert {layer_of(m) for m in ("negt2ibench", "negt2ibench.cli", "evaluator.cli", "validation.ablate_cli")} == {
        "shells"
    }
    assert (
        layer_of("evaluator.report.tables") == "evaluator"
        and layer_of("leaderboard.store.sqlite_store") == "leaderboard"
    )
    assert layer_of("space.verified_images.verified_source") == "space" and layer_of("leaderboard.cli") == "shells"
    documented = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name in (
        "negt2ibench/core/",
        "dataset_builder",
        "generation",
        "evaluator",
        "judges",
        "validation",
        "leaderboard/",
        "space",
    ):
        assert name in documented


# -- the checker itself, on planted trees ------------------------------------------------------------


def _plant(root: Path, files: dict[str, str]) -> Path:
    for package in PACKAGES:
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").touch()
    (root / "negt2ibench" / "core").mkdir(exist_ok=True)
    (root / "negt2ibench" / "core" / "__init__.py").touch()
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


CLEAN = {
    "negt2ibench/core/errors.py": "class UserError(Exception): ...\n",
    "dataset_builder/records.py": "from negt2ibench.core.errors import UserError\n",
    "evaluator/pipeline.py": "from dataset_builder.records import UserError\nfrom .results import X\n",
    "evaluator/results.py": "X = 1\n",
    "judges/runner.py": "from evaluator.pipeline import UserError\n",
    "validation/ablate.py": "def run():\n    from judges import runner\n",
    "negt2ibench/api.py": "import validation.ablate\n",
    "leaderboard/store/sqlite_store.py": "from negt2ibench.api import validation\n",
    "space/app.py": "from leaderboard.store.sqlite_store import validation\n",
    "space/cli.py": "from space.app import validation\nfrom evaluator.cli import register\n",
    "evaluator/cli.py": "from negt2ibench.api import validation\n\ndef register(): ...\n",
}


def test_the_checker_passes_a_clean_planted_tree(tmp_path):
    edges = import_edges(_plant(tmp_path, CLEAN))
    assert edges["validation.ablate"] == {"judges.runner"}  # a lazy import counts
    assert edges["evaluator.pipeline"] == {"dataset_builder.records", "evaluator.results"}  # relative resolved
    assert layer_violations(edges) == [] and import_cycles(edges) == []


@pytest.mark.parametrize(
    ("module", "text", "expected"),
    [
        # the foundation imports nothing of the project
        ("negt2ibench/core/options.py", "from dataset_builder.records import UserError\n", "core"),
        # a lazy import inside a function counts
        ("dataset_builder/loading.py", "def load():\n    from evaluator.pipeline import X\n", "dataset_builder"),
        # generation and evaluator never import each other
        ("generation/runner.py", "import evaluator.results\n", "generation"),
        # a TYPE_CHECKING import counts
        (
            "evaluator/selftest.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from negt2ibench.api import E\n",
            "evaluator",
        ),
        # only shells import shells
        ("space/shared_state.py", "from evaluator.cli import register\n", "space"),
        # the leaderboard's back end never imports the Space (its UI)
        ("leaderboard/checks/full_rescore_run.py", "from space.app import build_app\n", "leaderboard"),
        # a lazy registry target is an import too
        ("judges/registry.py", 'ADAPTERS = {"x": "validation.ablate:run"}\n', "judges"),
        # the package facade of negt2ibench is a shell
        ("negt2ibench/core/launch.py", "from negt2ibench import __version__\n", "core"),
    ],
)
def test_the_checker_finds_a_planted_violation(tmp_path, module, text, expected):
    edges = import_edges(_plant(tmp_path, CLEAN | {module: text}))
    found = layer_violations(edges)
    assert len(found) == 1 and found[0].startswith(module[:-3].replace("/", ".") + f" ({expected}) imports"), found


def test_the_checker_finds_a_planted_cycle(tmp_path):
    planted = CLEAN | {
        "evaluator/results.py": "X = 1\n\ndef later():\n    from evaluator import pipeline\n",  # pipeline ↔ results
    }
    edges = import_edges(_plant(tmp_path, planted))
    assert layer_violations(edges) == []  # both in one layer: only the cycle is wrong
    assert import_cycles(edges) == [["evaluator.pipeline", "evaluator.results"]]


# -- the leaderboard's rooms ---------------------------------------------------------------------------

# The leaderboard's sub-packages, lowest first (docs/architecture.md): a module of one imports only from its
# own room or a lower one. Its shells (`leaderboard.cli`, `leaderboard.hub.hub_cli`) may import any room.
LEADERBOARD_ROOMS = ("text", "store", "checks", "intake", "jobs", "hub")
LEADERBOARD_TOP = ("leaderboard", "leaderboard.cli")  # the package and its command module, in no room


def room_of(module: str) -> str:
    """The leaderboard room of a module of `leaderboard/` (its sub-package)."""
    parts = module.split(".")
    if parts[0] != "leaderboard" or len(parts) < 2 or parts[1] not in LEADERBOARD_ROOMS:
        raise AssertionError(f"{module}: not in one of the leaderboard's rooms {LEADERBOARD_ROOMS}")
    return parts[1]


def room_violations(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a leaderboard module (not a shell) that goes up to a later room."""
    found = []
    for module, targets in sorted(edges.items()):
        if not module.startswith("leaderboard.") or module in LEADERBOARD_TOP or layer_of(module) == "shells":
            continue
        source = LEADERBOARD_ROOMS.index(room_of(module))
        for target in sorted(targets):
            if target.startswith("leaderboard.") and target not in LEADERBOARD_TOP:
                goal = room_of(target)
                if LEADERBOARD_ROOMS.index(goal) > source:
                    found.append(f"{module} ({room_of(module)}) imports {target} ({goal})")
    return found


def test_every_leaderboard_module_is_in_a_room():
    modules = [m for m in project_modules(ROOT) if m.startswith("leaderboard.") and m not in LEADERBOARD_TOP]
    assert len(modules) > 30 and {m.split(".")[1] for m in modules} == set(LEADERBOARD_ROOMS)
    for module in modules:
        room_of(module)  # raises for a module outside the rooms


def test_the_leaderboards_rooms_import_only_downwards():
    assert room_violations(import_edges(ROOT)) == []


@pytest.mark.parametrize(
    ("module", "text"),
    [
        ("leaderboard/store/states.py", "from leaderboard.checks.check_setup import PRESET\n"),  # store → checks
        ("leaderboard/checks/full_rescore_run.py", "def later():\n    from leaderboard.intake import submissions\n"),
        ("leaderboard/text/paper_rows.py", "from leaderboard.hub.hub_check import X\n"),  # the lowest → the highest
    ],
)
def test_the_room_check_finds_a_planted_upward_import(tmp_path, module, text):
    planted = {name: "X = 1\n" for name in ("leaderboard/checks/check_setup.py", "leaderboard/hub/hub_check.py")}
    planted |= {"leaderboard/intake/submissions.py": "X = 1\n", module: text}
    found = room_violations(import_edges(_plant(tmp_path, CLEAN | planted)))
    assert len(found) == 1 and found[0].startswith(module[:-3].replace("/", ".") + " ("), found


def test_a_room_may_import_its_own_room_and_lower_ones(tmp_path):
    planted = {
        "leaderboard/text/paper_rows.py": "X = 1\n",
        "leaderboard/store/ranking.py": "from leaderboard.text.paper_rows import X\n",
        "leaderboard/store/states.py": "from leaderboard.store.ranking import X\n",
        "leaderboard/hub/hub_cli.py": "from leaderboard.hub.hub_check import X\n",  # a shell
        "leaderboard/hub/hub_check.py": "from leaderboard.store.states import X\n",
        "leaderboard/cli.py": "from leaderboard.hub.hub_cli import X\n",
    }
    assert room_violations(import_edges(_plant(tmp_path, CLEAN | planted))) == []


# -- the leaderboard's back end runs without the UI ------------------------------------------------

UI_LIBRARIES = ("gradio", "gradio_client", "spaces")


def ui_imports(root: Path) -> list[str]:
    """Every import of a UI library (gradio, its client, ZeroGPU's `spaces`) in the leaderboard package."""
    found = []
    for module, path in sorted(project_modules(root).items()):
        if not (module == "leaderboard" or module.startswith("leaderboard.")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            found += [f"{module} imports {name}" for name in names if name.split(".")[0] in UI_LIBRARIES]
    return found


def test_the_leaderboard_back_end_imports_no_ui_library():
    assert ui_imports(ROOT) == []


def test_the_ui_check_finds_a_planted_gradio_import(tmp_path):
    planted = CLEAN | {"leaderboard/checks/full_rescore_run.py": "def later():\n    import gradio as gr\n"}
    assert ui_imports(_plant(tmp_path, planted)) == ["leaderboard.checks.full_rescore_run imports gradio"]


def test_importing_every_back_end_module_loads_no_gradio():
    import subprocess
    import sys

    modules = sorted(m for m in project_modules(ROOT) if m == "leaderboard" or m.startswith("leaderboard."))
    script = (
        f"import importlib, sys\nfor m in {modules!r}:\n    importlib.import_module(m)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {UI_LIBRARIES!r}))"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(modules) > 10 and done.stdout.strip() == "[]"


# -- the Space's tabs ----------------------------------------------------------------------------------

# The Space's tabs, one sub-package of space/tabs/ each (docs/architecture.md, "Adding a Space tab"): a
# module of a tab imports only its own tab's folder and the shared top level of space/ (the shared state,
# the error messages, the prompt and verdict views, `space.verified_images` ...), never another tab's
# folder; the shared top level imports no tab. The app, its settings, the demo and the shell, which lay
# the tabs out, may import every tab.
SPACE_TABS = ("explore", "score", "leaderboard", "gallery", "compare", "submit", "annotate")
SPACE_APP = ("space.app", "space.app_settings", "space.demo", "space.cli")


def tab_of(module: str) -> str:
    """The tab whose folder holds a module of `space/` (its package `space.tabs.<tab>` included), or ""
    for the shared top level."""
    parts = module.split(".")
    if parts[0] != "space":
        raise AssertionError(f"{module}: not a module of space/")
    if parts[:2] != ["space", "tabs"] or len(parts) < 3:
        return ""
    if parts[2] not in SPACE_TABS:
        raise AssertionError(f"{module}: not in one of the Space's tab folders {SPACE_TABS}")
    return parts[2]


def tab_violations(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a module of `space/` (but the app's) that reaches into another tab's folder."""
    found = []
    for module, targets in sorted(edges.items()):
        if not module.startswith("space.") or module in SPACE_APP:
            continue
        source = tab_of(module)
        for target in sorted(targets):
            if target.startswith("space.tabs.") and tab_of(target) != source:
                found.append(f"{module} ({source or 'shared'}) imports {target} ({tab_of(target)})")
    return found


def test_every_module_of_space_tabs_is_in_a_tab_folder():
    modules = [m for m in project_modules(ROOT) if m.startswith("space.tabs.")]
    assert {tab_of(m) for m in modules} == set(SPACE_TABS)  # raises for a module outside the folders


def test_a_tab_imports_only_its_own_folder_and_the_shared_level():
    edges = import_edges(ROOT)
    assert any(target.startswith("space.tabs.") for target in edges["space.app"])  # the app lays the tabs out
    assert tab_violations(edges) == []


SPACE_CLEAN = {
    "space/error_messages.py": "X = 1\n",
    "space/verified_images/verified_entries.py": "from space.error_messages import X\n",
    "space/tabs/gallery/gallery_views.py": "X = 1\n",
    "space/tabs/gallery/gallery_tab.py": (
        "from space.verified_images.verified_entries import X\nfrom . import gallery_views\n"
        "from .gallery_views import X\n"
    ),
    "space/tabs/compare/compare_tab.py": "from ...verified_images.verified_entries import X\n",
    "space/app.py": "from .tabs.gallery import gallery_tab\nfrom .tabs.compare.compare_tab import X\n",
}


def test_the_tab_check_passes_a_clean_planted_space(tmp_path):
    edges = import_edges(_plant(tmp_path, CLEAN | SPACE_CLEAN))
    assert edges["space.tabs.gallery.gallery_tab"] == {
        "space.verified_images.verified_entries",
        "space.tabs.gallery.gallery_views",
    }
    assert tab_violations(edges) == [] and layer_violations(edges) == []


@pytest.mark.parametrize(
    ("module", "text"),
    [
        # Compare borrows the Gallery's layout: it belongs to the shared level
        ("space/tabs/compare/compare_tab.py", "from space.tabs.gallery.gallery_tab import full_view_layout\n"),
        ("space/tabs/compare/compare_views.py", "from ..gallery import gallery_views\n"),  # relative
        ("space/tabs/compare/compare_views.py", "def later():\n    from space.tabs.gallery import gallery_tab\n"),
        # the shared level imports no tab
        ("space/verified_images/verified_views.py", "from space.tabs.gallery.gallery_views import X\n"),
        ("space/error_messages.py", "from .tabs.gallery import gallery_tab\n"),
    ],
)
def test_the_tab_check_finds_a_planted_import_of_another_tab(tmp_path, module, text):
    found = tab_violations(import_edges(_plant(tmp_path, CLEAN | SPACE_CLEAN | {module: text})))
    assert len(found) == 1 and found[0].startswith(module[:-3].replace("/", ".") + " ("), found
    assert "space.tabs.gallery.gallery_" in found[0]


def test_a_module_of_space_tabs_outside_a_tab_folder_is_refused():
    for module in ("space.tabs.helpers", "space.tabs.search", "space.tabs.search.search_tab"):
        with pytest.raises(AssertionError, match="not in one of the Space's tab folders"):
            tab_of(module)
    assert tab_of("space.tabs") == tab_of("space.app") == "" and tab_of("space.tabs.score.score_tab") == "score"
    assert tab_of("space.tabs.score") == "score"  # the tab's package
