"""The Space's tabs, one sub-package each: `explore`, `score`, `leaderboard`, `gallery`, `compare`,
`submit`, `annotate`. A tab's folder holds its layout (`<tab>_tab.py`), its handlers (beside the
layout, or `<tab>_handlers.py`) and its pure views (`<tab>_views.py`, and e.g. the Leaderboard's
`entry_views` and `detail_figures`); a tab imports only its own folder and the shared top level of
`space/` (the shared state, error messages, prompt and verdict views, `space.verified_images`),
never another tab's folder (tests/project/test_layers.py).

Each tab's `build(...)` opens its `gr.Tab` inside the open Blocks, lays it out from the pure
view builders, and wires its events (and the `demo.load` that fills it) to the handlers it is
given; `space.app.build_app` makes the shared handlers and state and calls them in tab order.
"""
