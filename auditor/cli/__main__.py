"""``python -m auditor.cli``: the ``audit`` command."""

from .entry import main

main()
