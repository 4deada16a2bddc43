"""Run reports people read: Markdown, and self-contained HTML pages made from it."""
