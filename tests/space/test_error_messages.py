"""A failed event's answer (`space.error_messages`) and the empty verdict table every tab shows on an error."""

from __future__ import annotations

import pandas as pd

from space.error_messages import error_markdown
from space.verdict_views import verdict_frame


def test_error_markdown_and_empty_verdict_frame():
    assert error_markdown("one line") == "**Error:** one line"
    # further lines are an indented code block: nothing in them is Markdown or HTML
    assert error_markdown("first\nsecond\n```\n<b>x</b>") == "**Error:** first\n\n    second\n    ```\n    <b>x</b>"
    # the first line is plain text, and quotes at most a few hundred characters of a long input
    assert error_markdown("bad [x](http://e.vil) **b** `c`") == (
        "**Error:** bad \\[x\\]\\(http\\:\\/\\/e\\.vil\\) \\*\\*b\\*\\* `c`"
    )
    # what sits between backticks (our commands) is a code span, where no HTML or Markdown acts; an odd
    # backtick leaves all of it plain text
    assert error_markdown("run `<b>x</b>` now") == "**Error:** run `<b>x</b>` now"
    assert error_markdown("a `b` c `d") == "**Error:** a \\`b\\` c \\`d"
    long = error_markdown("cannot parse: " + "x" * 1_000_000)
    assert len(long) < 700 and long.endswith("\\(1\\,000\\,014 characters\\)")
    empty = verdict_frame(None, None)
    assert isinstance(empty, pd.DataFrame) and empty.empty and list(empty.columns)[:2] == ["item", "text"]
