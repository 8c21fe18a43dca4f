"""What a reader sees, checked in a real browser page (Playwright): no component drawn as an empty frame, no
table header broken inside a word, how many lines a table's header takes, and a page that has settled.

`EMPTY_OR_BROKEN` walks every visible gradio block: gradio marks a component with nothing in it (an
image, gallery, plot or file output) with `aria-label="Empty value"`; a table with headers and no row is
empty too; and each word of each header cell must sit on one line (its text's client rects on one top).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")  # Debian's (`make browser`); Playwright's own download fails offline
BROWSER_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

EMPTY_OR_BROKEN = """() => {
  const visible = (el) => !!el && el.offsetParent !== null && el.getBoundingClientRect().width > 0;
  const problems = [];
  for (const block of document.querySelectorAll('.block')) {
    if (!visible(block)) continue;
    const labelled = block.querySelector('[data-testid="block-label"], [data-testid="block-info"], label');
    const name = block.id || (labelled ? labelled.innerText.trim() : '') || block.className.slice(0, 40);
    if ([...block.querySelectorAll('[aria-label="Empty value"]')].some(visible)) problems.push('empty: ' + name);
    for (const table of block.querySelectorAll('table')) {
      if (!visible(table)) continue;
      if (table.querySelector('thead') && table.querySelectorAll('tbody tr').length === 0) {
        problems.push('empty table: ' + name);
      }
      for (const th of table.querySelectorAll('thead th')) {
        const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
        let node;
        while ((node = walker.nextNode())) {
          const words = /\\S+/g;
          let word;
          while ((word = words.exec(node.textContent))) {
            const range = document.createRange();
            range.setStart(node, word.index);
            range.setEnd(node, word.index + word[0].length);
            const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
            if (tops.size > 1) problems.push('header word broken: ' + word[0] + ' (' + name + ')');
          }
        }
      }
    }
  }
  return problems;
}"""

HEADER_LINES = """(selector) => {
  const table = document.querySelector(selector + ' table');
  let most = 0;
  for (const th of table.querySelectorAll('thead th')) {
    const tops = new Set();
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode())) {
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const r of range.getClientRects()) if (r.width > 0) tops.add(Math.round(r.top));
    }
    most = Math.max(most, tops.size);
  }
  return most;
}"""

# Settled: no component shows gradio's progress (its status tracker's eta bar or "pending" state).
SETTLED = """() => ![...document.querySelectorAll('.eta-bar, .wrap.pending, .wrap.generating')].some(
  (el) => el.offsetParent !== null)"""


def settle(page: Any, timeout_ms: int) -> None:
    """Wait until no event of the page is still running (state, not time)."""
    page.wait_for_function(SETTLED, timeout=timeout_ms)


def page_problems(page: Any) -> list[str]:
    """Every visible component drawn as an empty frame, and every table header word broken across lines."""
    return page.evaluate(EMPTY_OR_BROKEN)


def header_lines(page: Any, selector: str) -> int:
    """How many lines the tallest header cell of the table inside SELECTOR takes."""
    return page.evaluate(HEADER_LINES, selector)


def lasting_problems(page: Any, timeout_ms: int) -> list[str]:
    """The problems still there once the page has had TIMEOUT_MS to clear them: a component that gradio
    redraws (the board's timer re-renders the ranking plot while a submission awaits) is empty for the
    moment of its redraw, which no reader sees; one that stays empty is reported."""
    from playwright.sync_api import TimeoutError as StillThere

    try:
        page.wait_for_function(f"() => ({EMPTY_OR_BROKEN})().length === 0", timeout=timeout_ms)
    except StillThere:  # what is still wrong is reported below
        pass
    return page_problems(page)
