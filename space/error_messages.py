"""A failed event's answer, in every tab: a toast with its first line and the message as the status
Markdown, never a stack trace; the whole message goes to the log."""

from __future__ import annotations

import html
import logging

import gradio as gr

from leaderboard.text.submitted_names import QUOTE_LIMIT, clip, plain_markdown, shorten

log = logging.getLogger(__name__)


def error_markdown(message: str) -> str:
    """A one-line error in bold, as plain text (it may quote a stranger's input: at most a few
    hundred characters of it, its last clause kept whole: `submitted_names.shorten`); further lines (e.g. the
    grammar) below it as an indented code block, which no Markdown or HTML inside can leave."""
    first, *rest = message.splitlines() or [""]
    block = "\n".join("    " + clip(line, 300) for line in rest[:40])
    return f"**Error:** {plain_markdown(shorten(first, 600))}" + (f"\n\n{block}" if rest else "")


def error_reply(message: str) -> str:
    """A failed event's answer: a toast with its first line, and the message as the status Markdown
    (each cut to a length that keeps its last clause); the whole message goes to the log."""
    log.warning("answered with an error: %s", message)  # the whole text, whatever the reply shows of it
    first = message.splitlines()[0] if message else "error"
    gr.Warning(html.escape(shorten(first, QUOTE_LIMIT + 100)))  # the toast renders HTML
    return error_markdown(message)
