"""A self-contained HTML page from the Markdown our reports are written in.

The reports use a small, regular subset of Markdown (headings, paragraphs, ``-``
lists, pipe tables, ``**bold**``, `` `code` ``, links, images, ``---``), so the
page is made from the same text as the ``.md`` file instead of a second renderer
that could drift from it. Images are inlined as data URIs, so the one file opens
anywhere (a mail attachment, a presigned S3 link) with its charts. Everything
else is escaped: report text comes from LLMs and data vendors.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping

STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 980px; margin: 2em auto;
       padding: 0 1em; color: #1d2330; }
h1, h2, h3 { line-height: 1.25; } h1 { border-bottom: 2px solid #d8dde6; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { border: 1px solid #d8dde6; padding: 0.3em 0.6em; text-align: left; }
th { background: #f1f4f8; } code { background: #f1f4f8; padding: 0 0.2em; }
img { max-width: 100%; border: 1px solid #d8dde6; }
hr { border: 0; border-top: 1px solid #d8dde6; }
"""

_INLINE = re.compile(
    r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)]+)\)"
    r"|\[(?P<text>[^\]]+)\]\((?P<href>[^)]+)\)"
    r"|\*\*(?P<bold>.+?)\*\*"
    r"|`(?P<code>[^`]+)`"
)


def _image(alt: str, src: str, images: Mapping[str, bytes]) -> str:
    data = images.get(src)
    if data is None:
        return f"<em>[{html.escape(alt)}: no image]</em>"
    encoded = base64.b64encode(data).decode()
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{encoded}">'


def inline(text: str, images: Mapping[str, bytes]) -> str:
    """One line's inline markup as HTML, the rest escaped."""
    out, last = [], 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[last : match.start()]))
        if match["src"] is not None:
            out.append(_image(match["alt"], match["src"], images))
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


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _table(rows: list[str], images: Mapping[str, bytes]) -> str:
    header, body = _cells(rows[0]), rows[1:]
    if body and re.fullmatch(r"[\s|:-]+", body[0]):
        body = body[1:]  # the |---|---| separator line
    head = "".join(f"<th>{inline(cell, images)}</th>" for cell in header)
    lines = [
        "<tr>" + "".join(f"<td>{inline(cell, images)}</td>" for cell in _cells(row)) + "</tr>"
        for row in body
    ]
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table>"


def markdown_to_html(markdown: str, *, title: str, images: Mapping[str, bytes]) -> str:
    """The whole page: ``markdown`` rendered, ``images`` (by their Markdown src) inlined."""
    blocks: list[str] = []
    for block in re.split(r"\n\s*\n", markdown.strip()):
        lines = block.splitlines()
        heading = re.match(r"(#{1,4})\s+(.*)", lines[0])
        if heading:
            level = len(heading[1])
            blocks.append(f"<h{level}>{inline(heading[2], images)}</h{level}>")
            lines = lines[1:]
        if lines:
            blocks.append(markdown_to_html_fragment("\n".join(lines), images))
    body = "\n".join(blocks)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )


def markdown_to_html_fragment(block: str, images: Mapping[str, bytes]) -> str:
    """One block (no blank lines inside): a table, a list, a rule or a paragraph."""
    lines = block.splitlines()
    if all(line.lstrip().startswith("|") for line in lines):
        return _table(lines, images)
    if all(line.lstrip().startswith("- ") for line in lines):
        items = "".join(f"<li>{inline(line.lstrip()[2:], images)}</li>" for line in lines)
        return f"<ul>{items}</ul>"
    if block.strip() == "---":
        return "<hr>"
    if lines[0].strip() == "---":
        return "<hr>" + markdown_to_html_fragment("\n".join(lines[1:]), images)
    return "<p>" + "<br>".join(inline(line, images) for line in lines) + "</p>"
