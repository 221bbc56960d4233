"""Audit a training run while it trains: :class:`AuditCallback` for transformers' ``Trainer`` (and TRL's
trainers, which are Trainers).

    from auditor.callback import AuditCallback
    trainer.add_callback(AuditCallback(trainer=trainer, budget="auto,10m", policy="policies/gate.yaml",
                                       stop_on="fail"))

Each audited save is audited by the ``audit`` command in a separate process (:mod:`.process`) into
``checkpoint-N/audit/``; the verdict, DriftScore and every metric's Δ are logged through ``trainer.log``
(:mod:`.audit_callback`). Importing this package imports transformers.
"""

from .audit_callback import AuditCallback, CheckpointAudit

__all__ = ["AuditCallback", "CheckpointAudit"]
