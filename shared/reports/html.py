"""A small HTML page from the Markdown our reports are written in.

The reports use a small, regular subset of Markdown (headings, paragraphs, ``-``
lists, pipe tables, ``**bold**``, `` `code` ``, links, images, ``---``), so the
page is made from the same text as the ``.md`` file instead of a second renderer
that could drift from it. Everything is escaped: report text comes from LLMs and
data vendors.

Images are files beside the page (``chart-GOOG.png``), loaded only when scrolled to:
a run of hundreds of tickers inlining its charts would be a page of many megabytes.
`quantdesk report` downloads them next to the page and the console serves the folder,
so both open with their charts. A heading may end in ``{#id}`` (the Pandoc form) to be
a link's target, so a summary table can link each row to its detail further down.
Every table sorts by a click on a header, through one small inline script
(``SORT_SCRIPT``, allowed by its hash ``SORT_SCRIPT_CSP`` where a policy forbids
scripts): ordinal words (ratings, convictions) sort by rank, numbers by value, the
rest alphabetically.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re

from shared.agents.pipeline.schemas import Rating
from shared.agents.scan.schemas import Conviction

STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 980px; margin: 2em auto;
       padding: 0 1em; color: #1d2330; }
h1, h2, h3 { line-height: 1.25; } h1 { border-bottom: 2px solid #d8dde6; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { border: 1px solid #d8dde6; padding: 0.3em 0.6em; text-align: left; }
th { background: #f1f4f8; cursor: pointer; } code { background: #f1f4f8; padding: 0 0.2em; }
th[aria-sort=ascending]::after { content: " ▲"; } th[aria-sort=descending]::after { content: " ▼"; }
img { max-width: 100%; border: 1px solid #d8dde6; }
hr { border: 0; border-top: 1px solid #d8dde6; }
"""

RANKS = {
    word.lower(): rank
    for ladder in (list(reversed(Rating)), list(reversed(Conviction)))
    for rank, word in enumerate(ladder)
}
"""Ordinal words → their rank, lowest first (Sell 0 … Buy 4, low 0 … high 2)."""

SORT_SCRIPT = (
    f"const RANKS = {json.dumps(RANKS, sort_keys=True)};\n"
    """const key = (cell) => {
  const text = cell.innerText.trim(), word = text.split(/\\s/)[0].toLowerCase();
  if (word in RANKS) return [0, RANKS[word]];
  const number = parseFloat(text.replace(/[,$%]/g, ""));
  return Number.isNaN(number) ? [1, text.toLowerCase()] : [0, number];
};
for (const th of document.querySelectorAll("thead th")) th.addEventListener("click", () => {
  const body = th.closest("table").tBodies[0], column = th.cellIndex;
  const up = th.getAttribute("aria-sort") !== "ascending";
  for (const other of th.parentNode.children) other.removeAttribute("aria-sort");
  th.setAttribute("aria-sort", up ? "ascending" : "descending");
  const rows = [...body.rows].map((row) => [key(row.cells[column]), row]);
  rows.sort(([a], [b]) => (a[0] - b[0]) || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  if (!up) rows.reverse();
  for (const [, row] of rows) body.appendChild(row);
});
"""
)
SORT_SCRIPT_CSP = (
    "'sha256-" + base64.b64encode(hashlib.sha256(SORT_SCRIPT.encode()).digest()).decode() + "'"
)
"""The CSP source that allows the sorting script and nothing else."""

_INLINE = re.compile(
    r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)]+)\)"
    r"|\[(?P<text>[^\]]+)\]\((?P<href>[^)]+)\)"
    r"|\*\*(?P<bold>.+?)\*\*"
    r"|`(?P<code>[^`]+)`"
)
_BESIDE = re.compile(r"[\w.-]+")
"""An image src that names a file beside the page (no scheme, no folder)."""
_ANCHOR = re.compile(r"(.*?)\s*\{#([\w-]+)\}\s*")


def _image(alt: str, src: str) -> str:
    if not _BESIDE.fullmatch(src) or src.startswith("."):
        return f"<em>[{html.escape(alt)}: no image]</em>"
    return f'<img alt="{html.escape(alt)}" src="{html.escape(src)}" loading="lazy">'


def inline(text: str) -> str:
    """One line's inline markup as HTML, the rest escaped."""
    out, last = [], 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[last : match.start()]))
        if match["src"] is not None:
            out.append(_image(match["alt"], match["src"]))
        elif match["href"] is not None:
            href = match["href"]
            safe = href if href.startswith(("http://", "https://", "#")) else "#"
            out.append(f'<a href="{html.escape(safe)}">{html.escape(match["text"])}</a>')
        elif match["bold"] is not None:
            out.append(f"<strong>{html.escape(match['bold'])}</strong>")
        else:
            out.append(f"<code>{html.escape(match['code'])}</code>")
        last = match.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


def table_cell(text: str) -> str:
    """``text`` safe inside a pipe table's cell: one line, no ``|`` to split it."""
    return " ".join(text.replace("|", "/").split())


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _table(rows: list[str]) -> str:
    header, body = _cells(rows[0]), rows[1:]
    if body and re.fullmatch(r"[\s|:-]+", body[0]):
        body = body[1:]  # the |---|---| separator line
    head = "".join(f"<th>{inline(cell)}</th>" for cell in header)
    lines = [
        "<tr>" + "".join(f"<td>{inline(cell)}</td>" for cell in _cells(row)) + "</tr>"
        for row in body
    ]
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table>"


def _heading(level: int, text: str) -> str:
    anchored = _ANCHOR.fullmatch(text)
    if anchored is None:
        return f"<h{level}>{inline(text)}</h{level}>"
    return f'<h{level} id="{anchored[2]}">{inline(anchored[1])}</h{level}>'


def markdown_to_html(markdown: str, *, title: str) -> str:
    """The whole page: ``markdown`` rendered, its tables sortable."""
    blocks: list[str] = []
    for block in re.split(r"\n\s*\n", markdown.strip()):
        lines = block.splitlines()
        heading = re.match(r"(#{1,4})\s+(.*)", lines[0])
        if heading:
            blocks.append(_heading(len(heading[1]), heading[2]))
            lines = lines[1:]
        if lines:
            blocks.append(markdown_to_html_fragment("\n".join(lines)))
    body = "\n".join(blocks)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>"
        f"<body>\n{body}\n<script>{SORT_SCRIPT}</script>\n</body></html>\n"
    )


def markdown_to_html_fragment(block: str) -> str:
    """One block (no blank lines inside): a table, a list, a rule or a paragraph."""
    lines = block.splitlines()
    if all(line.lstrip().startswith("|") for line in lines):
        return _table(lines)
    if all(line.lstrip().startswith("- ") for line in lines):
        items = "".join(f"<li>{inline(line.lstrip()[2:])}</li>" for line in lines)
        return f"<ul>{items}</ul>"
    if block.strip() == "---":
        return "<hr>"
    if lines[0].strip() == "---":
        return "<hr>" + markdown_to_html_fragment("\n".join(lines[1:]))
    return "<p>" + "<br>".join(inline(line) for line in lines) + "</p>"
