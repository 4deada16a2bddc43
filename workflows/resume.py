"""Waiting for a person instead of failing: LLM calls that a fix outside the run can unblock.

A bad key, an unknown model or an exhausted quota fails every retry, yet it is
fixed in minutes by someone editing a worker's settings; so is a model whose reply
will not fit its schema even after the repair turns (choose another model, or
simply try again: replies vary). Failing the run would
throw away everything it finished; so a workflow that mixes in ``Resumable``
parks the failed call instead: the step shows as waiting with the reason in the
run's details (the Web UI's summary), and the call is tried again when the
``resume`` signal arrives (``quantdesk resume ID``, or the Web UI's signal
button). Calls that had finished are never repeated: they are in the history.

The gate travels in a context variable set at the start of ``run``, so every
``chat`` the run makes, however deep in tool loops and debates, finds it without
threading it through each signature. A run without a gate fails as before.
``resume`` is forwarded to the run's children, so resuming an AutoRun resumes
the Pipeline that is actually waiting.

A wait is also reported up: a parked call signals ``child_waits`` to the run's
parent, which shows it among its own waits under the child's path (``scan ›
geopolitical_scanner round 1``) and passes it on to its own parent; the same
signal with no reason clears it once the call goes on. So an AutoRun's
``progress`` and details say which grandchild waits and why, and ``quantdesk
resume`` on the AutoRun reaches it.

A parent that can do without a child may give up on it instead (``gives_up_on``):
an Evaluate does not wait for one window whose model keeps answering off-schema,
it cancels that child and scores the window failed; an AutoRun does the same with
one ticker's Pipeline. A refused key still parks: every child would need it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TypeVar

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from shared.notify.notices import Notice, NoticeKind
    from workflows.notify import tell
    from workflows.run_terms import current_terms

T = TypeVar("T")

BAD_REPLY = "StructuredOutputError"
"""The ``chat`` failure of a reply that stayed invalid after its repair turns. A step the
graph can do without is recorded as missing instead of parked (``chat(optional=True)``)."""

SPENDING_LIMIT = "SpendingLimitReached"
"""The ``chat`` failure of a call that could pass a spending limit: it waits for a raise."""
RESUMABLE_FAILURES: frozenset[str] = frozenset(
    {"ProviderError", "ConfigError", "PromptTooLong", BAD_REPLY, SPENDING_LIMIT}
)
"""Failure types of the ``chat`` activity that only a change of settings (or a new try) can fix."""
CHILD_WAITS = "child_waits"
WAITS_REPORTED_PATCH = "waits-reported-to-parent"
RESUMED_DURING_ATTEMPT_PATCH = "resumed-during-attempt"
"""Runs that parked on a failure after a ``resume`` had already come during the attempt
replay as they ran; asked only in that case, so no other history records it."""
PATH_SEPARATOR = " › "


class ChildWait(BaseModel):
    """A call waiting for ``resume`` somewhere below a run, as its parent is told."""

    path: str = Field(description="the child (and grandchild...) and step, e.g. scan › sector")
    reason: str | None = Field(description="why it waits; None: it waits no more")
    failure: str | None = Field(None, description="the failure type it waits on")

    @property
    def child(self) -> str:
        """The label of the child the wait is in (the path's first part)."""
        return self.path.split(PATH_SEPARATOR, 1)[0]


def child_label(parent_id: str, child_id: str) -> str:
    """How a parent names its child: the child's id less the parent's prefix (``scan`` for
    ``ar-1-scan`` under ``ar-1``), or the whole id when it has no such prefix."""
    return child_id.removeprefix(f"{parent_id}-") or child_id


def fixable_by_user(
    error: ActivityError, parks: frozenset[str] = RESUMABLE_FAILURES
) -> ApplicationError | None:
    """The failure, if ``error`` is a non-retryable failure of one of the ``parks`` types."""
    cause = error.cause
    if isinstance(cause, ApplicationError) and cause.type in parks:
        return cause
    return None


class ResumeGate:
    """The calls waiting for ``resume``, and how many resumes have come."""

    def __init__(self) -> None:
        self.resumes = 0
        self.waiting: dict[str, str] = {}
        self.below: dict[str, str] = {}
        """Waits reported by children and their children, by path."""
        self.given_up: dict[str, str] = {}
        """Children cancelled rather than waited for, with the wait's reason."""
        self.children: dict[str, str] = {}
        """Running children: workflow id → the step each runs as ("" when none)."""
        self.details = ""

    def all_waiting(self) -> dict[str, str]:
        """This run's own waits, then those below it."""
        return {**self.waiting, **self.below}

    def show(self, details: str) -> None:
        """What the run is doing, for the Web UI's current details (waits come first)."""
        self.details = details
        self._show()

    def _show(self) -> None:
        if waiting := self.all_waiting():
            steps = "; ".join(f"{step} waits: {reason}" for step, reason in waiting.items())
            workflow.set_current_details(
                f"**Waiting for a fix.** {steps}\n\nFix the setting, then send the `resume` "
                f"signal (`quantdesk resume {workflow.info().workflow_id}`).\n\n{self.details}"
            )
        else:
            workflow.set_current_details(self.details)

    async def guard(
        self,
        step: str,
        attempt: Callable[[], Awaitable[T]],
        parks: frozenset[str] = RESUMABLE_FAILURES,
    ) -> T:
        """``attempt()``; after a user-fixable failure (of the ``parks`` types), wait for
        ``resume`` and try again. A ``resume`` that came while the attempt was out counts:
        the fix (a limit raised as the call was refused) may already be in."""
        while True:
            began = self.resumes
            try:
                return await attempt()
            except ActivityError as error:
                failure = fixable_by_user(error, parks)
                if failure is None:
                    raise
            if self.resumes > began and workflow.patched(RESUMED_DURING_ATTEMPT_PATCH):
                continue
            seen = self.resumes
            self.waiting[step] = failure.message
            self._show()
            workflow.logger.warning("%s waits for resume: %s", step, failure.message)
            await self.tell_parent(
                ChildWait(path=step, reason=failure.message, failure=failure.type)
            )
            if failure.type == SPENDING_LIMIT:
                await tell(spending_notice(step, failure.message, seen))
            await workflow.wait_condition(self._resumed_since(seen))
            self.waiting.pop(step, None)
            self._show()
            await self.tell_parent(ChildWait(path=step, reason=None))

    def _resumed_since(self, seen: int) -> Callable[[], bool]:
        """A condition that holds once a ``resume`` has come after the first ``seen``."""
        return lambda: self.resumes > seen

    def child_waits(self, report: ChildWait) -> None:
        """Record (or, with no reason, clear) a wait below this run."""
        if report.reason is None:
            self.below.pop(report.path, None)
        else:
            self.below[report.path] = report.reason
        self._show()

    def child_closed(self, workflow_id: str) -> None:
        """A closed child waits no more, nor does anything below it."""
        self.children.pop(workflow_id, None)
        label = child_label(workflow.info().workflow_id, workflow_id)
        gone = [p for p in self.below if p == label or p.startswith(label + PATH_SEPARATOR)]
        for path in gone:
            del self.below[path]
        if gone:
            self._show()

    async def tell_parent(self, report: ChildWait) -> None:
        """Report a wait below (or in) this run to its parent, if it has one.

        Runs parked before parents were told replay without this signal in their history;
        the patch keeps them replaying exactly (docs/development.md, "Changing workflow code
        safely").
        """
        parent = workflow.info().parent
        if parent is None or not workflow.patched(WAITS_REPORTED_PATCH):
            return
        label = child_label(parent.workflow_id, workflow.info().workflow_id)
        try:
            await workflow.get_external_workflow_handle(parent.workflow_id).signal(
                CHILD_WAITS,
                report.model_copy(update={"path": f"{label}{PATH_SEPARATOR}{report.path}"}),
            )
        except Exception as error:  # a parent that closed (a Reflect left running) needs no word
            workflow.logger.debug("wait not reported to %s: %s", parent.workflow_id, error)


def spending_notice(step: str, reason: str, seen: int) -> Notice:
    """People are told a limit stopped the run's tree: which step waits, the limit, and how to
    raise it. One notice per limit reached in a tree (keyed by its root and the resumes
    seen), however many of its runs wait on it."""
    terms = current_terms()
    root = terms.root if terms is not None else workflow.info().workflow_id
    return Notice(
        kind=NoticeKind.SPENDING_LIMIT,
        run=root,
        event=str(seen),
        title=f"Spending limit reached: {root} waits",
        body=f"{workflow.info().workflow_id} waits at {step}: {reason}",
    )


_GATE: ContextVar[ResumeGate | None] = ContextVar("quantdesk_resume_gate", default=None)


def current_gate() -> ResumeGate | None:
    """The running workflow's gate, if it is resumable."""
    return _GATE.get()


class Resumable:
    """Mixin for workflow classes: a ``resume`` signal, and ``open_gate()`` for ``run``."""

    gate: ResumeGate

    def open_gate(self) -> ResumeGate:
        """Make this run's LLM calls wait on failures a person can fix; call it first in run."""
        self.gate = ResumeGate()
        _GATE.set(self.gate)
        return self.gate

    def waiting_steps(self) -> dict[str, str]:
        """The calls waiting for ``resume`` and why, here and below, for the progress queries."""
        gate: ResumeGate | None = getattr(self, "gate", None)
        return gate.all_waiting() if gate is not None else {}

    def child_started(self, workflow_id: str, step: str = "") -> None:
        """Remember a running child (and the ``step`` it runs as) so that ``resume`` reaches it
        too, and the progress names it (``RunProgress.children``)."""
        self.gate.children[workflow_id] = step

    def running_children(self) -> dict[str, str]:
        """The running children and the step each runs as, for the progress queries."""
        gate: ResumeGate | None = getattr(self, "gate", None)
        return dict(gate.children) if gate is not None else {}

    def child_finished(self, workflow_id: str) -> None:
        """A closed child needs no more signals, and waits no more."""
        self.gate.child_closed(workflow_id)

    def gives_up_on(self, child: str, failure: str) -> bool:
        """Whether a wait on ``failure`` in ``child`` (its label) should not be waited for:
        the child is cancelled and the run records it as failed. No, unless a flow says so."""
        return False

    def given_up_reason(self, workflow_id: str) -> str | None:
        """Why this run cancelled child ``workflow_id`` rather than wait for it, if it did."""
        return self.gate.given_up.get(workflow_id)

    @workflow.signal(name=CHILD_WAITS)
    async def child_waits(self, report: ChildWait) -> None:
        """A call below this run waits (or goes on): show it here and tell the parent, or
        give up on the child if this flow can do without it."""
        if getattr(self, "gate", None) is None:
            return  # not started yet: no child can exist
        if report.reason and report.failure and self.gives_up_on(report.child, report.failure):
            # A child started under another run's prefix (a batch's Pipelines) is its own label.
            own = report.child in self.gate.children
            child_id = report.child if own else f"{workflow.info().workflow_id}-{report.child}"
            self.gate.given_up[child_id] = f"{report.path}: {report.reason}"
            workflow.logger.warning("gave up on %s: %s", child_id, report.reason)
            await workflow.get_external_workflow_handle(child_id).cancel()
            return
        self.gate.child_waits(report)
        await self.gate.tell_parent(report)

    @workflow.signal(name="resume")
    async def resume(self) -> None:
        """Try the waiting calls again, here and in every child started so far."""
        if getattr(self, "gate", None) is None:
            return  # not started yet: nothing can be waiting
        self.gate.resumes += 1
        for child in sorted(self.gate.children):
            try:
                await workflow.get_external_workflow_handle(child).signal("resume")
            except Exception as error:  # a finished child cannot be signalled, nor needs to be
                workflow.logger.debug("resume not forwarded to %s: %s", child, error)
