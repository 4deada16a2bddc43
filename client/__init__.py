"""The desk's client: every operation a door performs, typed, with nothing rendered.

The CLI, the web console and the MCP server are doors over this package: they parse what a
person or an assistant asks, call the client, and render its answer. The client starts a flow
from its checked input, reads a run (status, steps, waits, stuck or not, usage, result,
report), lists root runs with their children folded, resumes, raises limits, answers a plan,
runs schedules, and reads books. It imports the runtime (workflows, activities, workers) and
``shared``, never a door (``tests/test_architecture.py``).
"""
