"""diagnose history STORE: a watch store's verdict timeline (terminal, JSON, HTML)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from diagnose.app.output import write_text
from diagnose.cli.group import main
from diagnose.escape import term
from diagnose.render.watch import render_history_html, render_history_text
from diagnose.watch.history import history as store_history
from diagnose.watch.store import Store

HTML_NAME = "history.html"


@main.command()
@click.argument("store", metavar="STORE", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the timeline as JSON on stdout.")
@click.option("--html", "as_html", is_flag=True,
              help=f"Write the timeline page: STORE/{HTML_NAME}, or -o.")  # fmt: skip
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), default=None,
              help="Where the HTML page goes (a file; implies --html).")  # fmt: skip
def history(store: Path, as_json: bool, as_html: bool, out: Path | None) -> None:
    """Show the verdicts of a `diagnose watch` store over time: one line per run of
    captures with the same verdict (--json: every capture, oldest first; --html: verdict
    bands over time, with links to the bundles kept)."""
    page = out if out is not None else (store / HTML_NAME if as_html else None)
    # the page's links are relative to where it is written
    base = "" if page is None else os.path.relpath(str(store), str(page.parent)) + "/"
    with Store.open(store) as s:
        model = store_history(s, "" if base == "./" else base)
    if page is not None:
        write_text(page, render_history_html(model))
    if as_json:
        click.echo(json.dumps(model, indent=1, ensure_ascii=False, allow_nan=False))
    else:
        click.echo(render_history_text(model), nl=False)
    if page is not None:
        click.echo(f"html: {term(page, 1000)}", err=True)
