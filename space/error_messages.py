"""A failed event's answer, in every tab: the message once, whole, as the status Markdown beside what
failed (no toast that repeats it cut short), never a stack trace; the whole message goes to the log."""

from __future__ import annotations

import logging

from leaderboard.text.submitted_names import clip, code_span, plain_markdown, shorten

log = logging.getLogger(__name__)


def error_markdown(message: str) -> str:
    """A one-line error in bold, as plain text (it may quote a stranger's input: at most a few
    hundred characters of it, its last clause kept whole: `submitted_names.shorten`); further lines (e.g. the
    grammar) below it as an indented code block, which no Markdown or HTML inside can leave."""
    first, *rest = message.splitlines() or [""]
    block = "\n".join("    " + clip(line, 300) for line in rest[:40])
    return f"**Error:** {with_code(shorten(first, 600))}" + (f"\n\n{block}" if rest else "")


def with_code(text: str) -> str:
    """TEXT as Markdown: what our messages quote between backticks (a command: `negt2ibench score`) as
    code, the rest as plain text; with an odd number of backticks, all of it plain text."""
    parts = text.split("`")
    if len(parts) % 2 == 0:
        return plain_markdown(text)
    shown = (code_span(part) if index % 2 else plain_markdown(part) for index, part in enumerate(parts))
    return "".join(piece for piece, part in zip(shown, parts, strict=True) if part)


def error_reply(message: str) -> str:
    """A failed event's answer: the message as the status Markdown (cut to a length that keeps its last
    clause), shown once beside what failed; the whole message goes to the log."""
    log.warning("answered with an error: %s", message)  # the whole text, whatever the reply shows of it
    return error_markdown(message)
