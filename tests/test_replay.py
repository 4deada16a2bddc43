"""Today's workflow code replays every golden history: in-flight runs survive an upgrade.

The histories in ``tests/histories/`` were recorded by ``python -m
tests.histories.record`` (one per workflow type, and older ones kept after a gated
change). A change that makes a workflow issue other commands than a history shows
fails here with Temporal's non-determinism error, instead of failing users' runs.
They replay through the plain converter and through one with the payload codec on: a
worker that encrypts still reads the plain histories of runs started before it did.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.worker import Replayer

from shared.config import Settings, load_settings
from shared.payload_keys import new_key_line
from tests.histories.record import ID_SEPARATOR
from workers.converter import data_converter
from workflows.catalog import WORKFLOWS

HISTORIES = Path(__file__).resolve().parent / "histories"
FILES = sorted(HISTORIES.glob("*.json"))
CONVERTERS = ("plain", "encrypting")
"""pydantic's own, and the product's with encryption on (and its claim check, which stores a
replayed command's large payload again: it needs the session's S3)."""


def _converter(name: str, s3: Settings) -> DataConverter:
    if name == "plain":
        return pydantic_data_converter
    keys = {"keys": new_key_line("replay"), "enabled": True}
    access, secret = s3.s3_credentials()
    return data_converter(
        load_settings(
            codec=keys, s3={**s3.s3.model_dump(), "access_key": access, "secret_key": secret}
        )
    )


def _type_of(history: WorkflowHistory) -> str:
    return history.events[0].workflow_execution_started_event_attributes.workflow_type.name


def _load(path: Path) -> WorkflowHistory:
    """A history file named ``<Type>--<workflow id>.json`` (see ``tests.histories.record``)."""
    _, workflow_id = path.stem.split(ID_SEPARATOR, 1)
    return WorkflowHistory.from_json(workflow_id, path.read_text())


def test_every_workflow_type_has_a_golden_history() -> None:
    recorded = {_type_of(_load(path)) for path in FILES}
    registered = {flow.__temporal_workflow_definition.name for flow in WORKFLOWS}  # type: ignore[attr-defined]
    assert registered <= recorded


@pytest.mark.parametrize("converter", CONVERTERS)
@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
@pytest.mark.asyncio(loop_scope="session")
async def test_the_golden_history_replays_with_todays_code(
    path: Path, converter: str, s3_settings: Settings
) -> None:
    replayer = Replayer(workflows=WORKFLOWS, data_converter=_converter(converter, s3_settings))
    result = await replayer.replay_workflow(_load(path), raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"
