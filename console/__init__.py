"""The quantdesk console: a web page to watch, read, approve and start runs.

Server-rendered pages (FastAPI + Jinja2) with a few lines of plain JavaScript that
refresh the live parts; no Node build and no CDN. It reads Temporal, S3 and SQL through
the same clients and contracts as the CLI.
"""
