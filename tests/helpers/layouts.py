"""The layout of each tab of the Space: its components, in order, as gradio's own config lists them.

`make screenshots` records the layout of each tab it photographs beside the pictures
(`docs/img/space_layouts.json`, picture → layout); tests/space/test_screenshots_current.py builds the same
app and fails, naming the picture to retake, when a tab's layout differs from the one photographed. A
component is written as its type and its label or elem_id (what a reader sees change), in page order;
values (the data shown) do not count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LAYOUTS_FILE = Path(__file__).resolve().parents[2] / "docs" / "img" / "space_layouts.json"
# The manual's pictures of the Space, and the tab (its `id`) each photographs.
PICTURE_TABS = {
    "space_leaderboard.png": "leaderboard",
    "space_explore.png": "explore",
    "space_score.png": "score",
    "space_gallery.png": "gallery",
    "space_compare.png": "compare",
    "space_submit.png": "submit",
    "space_annotate.png": "annotate",
}


def tab_layouts(blocks: Any) -> dict[str, list[str]]:
    """Each tab's components, in page order, by the tab's id.

    Args:
        blocks: a built gradio Blocks (the Space's app).

    Returns:
        {tab id: ["type:label-or-elem_id", ...]} for every tab item of the app.
    """
    config = blocks.get_config_file()
    components = {item["id"]: item for item in config["components"]}

    def names(node: dict) -> list[str]:
        found = []
        for child in node.get("children", []):
            item = components.get(child["id"], {})
            props = item.get("props", {})
            label = props.get("label") or props.get("elem_id") or ""
            found.append(f"{item.get('type', '?')}:{label}")
            found += names(child)
        return found

    layouts: dict[str, list[str]] = {}

    def visit(node: dict) -> None:
        for child in node.get("children", []):
            item = components.get(child["id"], {})
            if item.get("type") == "tabitem":
                layouts[str(item["props"].get("id") or item["props"].get("label"))] = names(child)
            else:
                visit(child)

    visit(config["layout"])
    return layouts


def record_layouts(blocks: Any, pictures: list[str], path: Path = LAYOUTS_FILE) -> None:
    """Write the layouts of the tabs PICTURES photograph into PATH (the pictures just taken)."""
    layouts = tab_layouts(blocks)
    recorded = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for picture in pictures:
        recorded[picture] = layouts[PICTURE_TABS[picture]]
    path.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def stale_pictures(blocks: Any, path: Path = LAYOUTS_FILE) -> list[str]:
    """The manual's pictures whose tab's layout is not the one recorded when they were taken (or never was)."""
    recorded = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    layouts = tab_layouts(blocks)
    return [picture for picture, tab in PICTURE_TABS.items() if recorded.get(picture) != layouts.get(tab)]
