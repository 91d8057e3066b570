"""The ``diagnose`` click group: errors become one line and an exit code. Every command
module adds itself to :data:`main` when imported, and :data:`main` imports a command's
module when a command line (or ``--help``) names it: ``diagnose attach`` starts recording
without importing what only reading a bundle needs (pandas, pyarrow, jinja2: about a
second here, tests/unit/test_cli_start.py). Click documents this as lazy subcommands."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from diagnose import __version__
from diagnose.errors import DiagnoseError, ExitCode
from diagnose.escape import term

#: command name -> the module that defines it
COMMANDS = {
    "attach": "diagnose.cli.attach",
    "compare": "diagnose.cli.compare",
    "demo": "diagnose.cli.demo",
    "doctor": "diagnose.cli.doctor",
    "export": "diagnose.cli.export",
    "fleet": "diagnose.cli.fleet",
    "history": "diagnose.cli.history",
    "report": "diagnose.cli.report",
    "rules": "diagnose.cli.rules_cmd",
    "run": "diagnose.cli.run",
    "sweep": "diagnose.cli.sweep",
    "watch": "diagnose.cli.watch",
}


class DiagnoseGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(COMMANDS[cmd_name])  # adds the command to ``main``
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DiagnoseError as exc:
            # one line, whatever the message quotes (a bundle's field names, a path)
            click.echo(f"diagnose: error: {term(str(exc), 2000)}", err=True)
            ctx.exit(int(exc.exit_code))
        except KeyboardInterrupt:
            click.echo("diagnose: interrupted", err=True)
            ctx.exit(int(ExitCode.INTERRUPTED))
        except BrokenPipeError:
            sys.stderr.close()
            ctx.exit(0)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        # click's own usage errors exit 2 already, which is ExitCode.USAGE
        assert int(ExitCode.USAGE) == 2
        return super().main(*args, **kwargs)


@click.group(
    cls=DiagnoseGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="diagnose")
def main() -> None:
    """Find why an AI inference service collapses under concurrency.

    \b
    diagnose attach PID        capture a running process and diagnose it
    diagnose run -- CMD ...    start a command, diagnose it, stop it
    diagnose report BUNDLE     re-render a bundle's report (after editing rules, say)
    diagnose compare OLD NEW   what changed between two bundles or reports (one change)
    diagnose sweep PID --load  stepped load test: the knee, a verdict per step, capacity
    diagnose export BUNDLE     its flame views as pprof or speedscope files
    diagnose watch PID         a short capture every 10 min into a store, Prometheus metrics
    diagnose history STORE     a watch store's verdicts over time
    diagnose fleet STORE...    many pods' verdicts side by side, and the odd ones
    diagnose demo              run it all on a bundled sample workload
    """
