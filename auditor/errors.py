"""The exit codes of ``audit``, and the error that ends an audit with exit code 2 (usage / input error).

Every fault in what the user handed us (an adapter, a policy, a suite file,
a base model folder) is raised as :class:`AuditInputError`, which the CLI
prints as exactly one line ``error: <file>: <fault>`` and exit code 2.
No verdict is ever produced after one of these.
"""

from __future__ import annotations

import re
from pathlib import Path

#: exit codes of the ``audit`` command (docs/concepts/design.md, the data flow)
EXIT_PASS = 0
EXIT_POLICY_FAIL = 1
EXIT_INPUT_ERROR = 2
#: an internal fault (a bug, or an engine that failed for reasons of its own): one line, no traceback
EXIT_INTERNAL_ERROR = 3


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class AuditInputError(Exception):
    """A fault in an input file or argument.

    Args:
        path: the file (or argument name) at fault; shown first in the message.
        fault: one sentence describing what is wrong and, where possible, how
            to fix it. Must not contain newlines (it is printed on one line).
    """

    def __init__(self, path: str | Path | None, fault: str) -> None:
        self.path = str(path) if path is not None else None
        self.fault = " ".join(str(fault).split())
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """The message as printed by the CLI: ``<path>: <fault>``; control characters in
        the path (a newline at the end of a pasted name) are shown escaped (``\\n``)."""
        if not self.path:
            return self.fault
        return f"{_CONTROL.sub(lambda m: repr(m.group())[1:-1], self.path)}: {self.fault}"
