"""Every workflow class the ``workflows`` worker role runs."""

from __future__ import annotations

from workflows.autorun import AutoRunWorkflow
from workflows.backtest import BacktestWorkflow
from workflows.broker_orders import BrokerOrdersWorkflow
from workflows.debates import DebateWorkflow, RiskWorkflow
from workflows.evaluate import EvaluateWorkflow
from workflows.notify import NotifyWorkflow
from workflows.pipeline import PipelineWorkflow
from workflows.pipeline_batch import PipelineBatchWorkflow
from workflows.portfolio import PortfolioWorkflow
from workflows.quantagent import QuantAgentWorkflow
from workflows.reconcile import ReconcileWorkflow
from workflows.record_social import RecordSocialWorkflow
from workflows.reflect import ReflectWorkflow
from workflows.scan import ScanWorkflow
from workflows.watch import WatchWorkflow

WORKFLOWS: list[type] = [
    QuantAgentWorkflow,
    PipelineWorkflow,
    PipelineBatchWorkflow,
    DebateWorkflow,
    RiskWorkflow,
    ReflectWorkflow,
    BacktestWorkflow,
    EvaluateWorkflow,
    ScanWorkflow,
    AutoRunWorkflow,
    PortfolioWorkflow,
    BrokerOrdersWorkflow,
    ReconcileWorkflow,
    RecordSocialWorkflow,
    NotifyWorkflow,
    WatchWorkflow,
]
