"""The Space's tabs, one module each: `explore`, `score`, `leaderboard` (its model detail's figures in
`leaderboard_figures`), `gallery`, `compare`, `submit`, `annotate`.

Each module's `build(...)` opens its `gr.Tab` inside the open Blocks, lays it out from the pure
view builders, and wires its events (and the `demo.load` that fills it) to the handlers it is
given; `space.app.build_app` makes the shared handlers and state and calls them in tab order.
"""
