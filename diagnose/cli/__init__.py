"""The command line: a thin click layer over the library. One module per command.

Errors a user can act on (:class:`diagnose.errors.DiagnoseError`) become one line on stderr
and a documented exit code (README, "Exit codes"); anything else is a bug: exit code 1 and
the traceback, so it can be reported.
"""

from __future__ import annotations

from diagnose.cli.group import DiagnoseGroup, main

# each command module adds its command to ``main`` when imported; ``main`` imports the one a
# command line names (cli/group.py, COMMANDS)

__all__ = ["DiagnoseGroup", "main"]
