"""adapter-auditor: decide whether a LoRA adapter is safe to ship.

Stages (one module each, in data-flow order, see DESIGN.md §2):
``inspection`` → ``plan`` → ``generate`` → ``score`` → ``compare`` →
``judge`` → ``report``. Records passed between stages live in ``records``.
"""

__version__ = "0.1.0"
