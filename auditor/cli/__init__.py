"""The command line: every ``audit`` command and its options (click), none inside a stage.

* :mod:`.entry`: the ``audit`` group and :func:`main`, the console script (errors → one line, exit code);
* :mod:`.run_command`: ``audit run ADAPTER ...`` (and ``audit ADAPTER ...``): the options read into one
  :class:`~auditor.cli.run_command.RunOptions` record, handed to :mod:`auditor.pipeline`;
* :mod:`.report_command`, :mod:`.merge_command`, :mod:`.cache_command`: ``audit report``, ``audit merge``,
  ``audit cache``;
* :mod:`.hub_options`: the Hub files' options ``audit run`` and ``audit report`` share;
* :mod:`.console`: where they print.

``python -m auditor.cli`` runs :func:`main` too.
"""

from .entry import cli, main

__all__ = ["cli", "main"]
