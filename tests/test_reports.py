"""The HTML page made from a report's Markdown: structure kept, images beside it, text escaped."""

from __future__ import annotations

from shared.reports.autorun import chart_name
from shared.reports.html import SORT_SCRIPT, markdown_to_html, table_cell


def test_headings_tables_lists_and_images_become_html() -> None:
    markdown = (
        "# Desk as of 2012-06-01\n\nRun `ar-1`, **2** trades.\n\n"
        "## Trades\n| side | symbol |\n|---|---|\n| BUY | ADVZ |\n\n"
        "- one\n- two\n\n![ADVZ price](chart-ADVZ.png)\n\n---\nend"
    )
    page = markdown_to_html(markdown, title="Desk")

    assert page.startswith("<!DOCTYPE html>") and "<title>Desk</title>" in page
    assert "<h1>Desk as of 2012-06-01</h1>" in page and "<h2>Trades</h2>" in page
    assert "<code>ar-1</code>" in page and "<strong>2</strong>" in page
    assert "<thead><tr><th>side</th><th>symbol</th></tr></thead>" in page
    assert "<tbody><tr><td>BUY</td><td>ADVZ</td></tr></tbody>" in page
    assert "<ul><li>one</li><li>two</li></ul>" in page
    assert '<img alt="ADVZ price" src="chart-ADVZ.png" loading="lazy">' in page
    assert "<hr><p>end</p>" in page
    assert f"<script>{SORT_SCRIPT}</script>" in page


def test_a_heading_with_an_id_is_a_link_target() -> None:
    page = markdown_to_html("## Summary {#summary}\n\n[top](#summary)", title="t")

    assert '<h2 id="summary">Summary</h2>' in page and '<a href="#summary">top</a>' in page


def test_a_table_cell_is_one_line_without_pipes() -> None:
    assert table_cell("vendor said a|b\nthen  c") == "vendor said a/b then c"


def test_model_and_vendor_text_is_escaped_and_links_are_only_web_links() -> None:
    markdown = (
        "A <script>alert(1)</script> & co\n\n[ok](https://example.com/r?a=1&b=2) "
        "[bad](javascript:alert(1))\n\n![elsewhere](https://tracker.example/p.png) "
        "![up](../secret.png)"
    )
    page = markdown_to_html(markdown, title="<x>")

    assert page.count("<script>") == 1  # the sorter only
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in page
    assert '<a href="https://example.com/r?a=1&amp;b=2">ok</a>' in page
    assert '<a href="#">bad</a>' in page
    assert "<em>[elsewhere: no image]</em>" in page and "<em>[up: no image]</em>" in page
    assert "<title>&lt;x&gt;</title>" in page


def test_chart_names_are_safe_file_names() -> None:
    assert chart_name("^GSPC") == "chart-_GSPC.png"
    assert chart_name("BRK.B") == "chart-BRK_B.png"
