"""Where a run keeps its objects: keys chosen from the workflow id and run id.

A retried activity writes to the same key (an overwrite, never a second copy), and
two runs of one workflow id never share one.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from shared.storage.buckets import REPORTS_BUCKET
    from shared.storage.objects import ObjectRef


def run_key_prefix(flow: str) -> str:
    """``{flow}/{workflow_id}/{run_id}``: the object keys of this run."""
    info = workflow.info()
    return f"{flow}/{info.workflow_id}/{info.run_id}"


def run_report(flow: str, name: str) -> ObjectRef:
    """The object ``name`` (``report.md``, ``reports/{agent}.md``) in the reports bucket,
    under this run's keys."""
    return ObjectRef(bucket=REPORTS_BUCKET, key=f"{run_key_prefix(flow)}/{name}")
