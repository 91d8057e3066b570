"""``diagnose export``: a bundle's flame views written as profile files, one per view.

Every view is analysed and encoded before any file is written, and each file is written
through a directory held open (:class:`~diagnose.app.output.OutputTarget`): it is either the old
one or complete. Where the files go: into the bundle (default), a directory (``-o DIR``), one
file (``-o FILE`` for one view) or stdout (``-o -``, one view).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from diagnose.analyse import analyse
from diagnose.app.output import OutputTarget, is_stream, open_directory
from diagnose.app.report import open_bundle
from diagnose.errors import BadBundle, UsageError
from diagnose.export.encoders import ENCODERS
from diagnose.export.profile import FlatProfile
from diagnose.export.views import build_profiles, capture_facts

if TYPE_CHECKING:
    from diagnose.bundle.reader import Bundle


def bundle_profiles(bundle: Bundle, rules_dirs: Sequence[Path] = ()) -> dict[str, FlatProfile]:
    """The bundle's flame views as flat profiles (``rules_dirs``: frames.toml's stages)."""
    rules = list(rules_dirs)
    analysis = analyse(bundle, rules[-1] if rules else None)
    return build_profiles(analysis, capture_facts(bundle))


def choose_views(profiles: Mapping[str, FlatProfile], view: str | None, where: Path) -> list[str]:
    if not profiles:
        raise BadBundle(f"{where} holds no stacks to export: neither py-spy nor perf recorded any")
    if view is None:
        return list(profiles)
    if view not in profiles:
        raise UsageError(f"{where} has no {view} view; it has {', '.join(profiles)}")
    return [view]


def open_export_target(
    bundle: Bundle, names: dict[str, str], out: Path | None, one_asked: bool
) -> OutputTarget:
    """Where the files go. ``out`` is one file when one view is written (``--view``, or a
    name with a suffix) and is not a directory; else a directory (created if missing)."""
    if out is None:
        assert bundle.dir is not None
        return OutputTarget(bundle.dir, names)
    if is_stream(out):
        if len(names) > 1:
            raise UsageError(
                f"-o {out} takes one view, and this bundle has {len(names)}: choose one with "
                f"--view {', '.join(names)}"
            )
        return OutputTarget(None, names, stream=out)
    if len(names) == 1 and not out.is_dir() and (one_asked or out.suffix):
        return OutputTarget(open_directory(out.parent, create=True), {next(iter(names)): out.name})
    if out.exists() and not out.is_dir():
        raise UsageError(
            f"-o {out} is a file; with several views give a directory, or choose one with --view"
        )
    return OutputTarget(open_directory(out, create=True), names)


def export_bundle(
    source: Path | Bundle,
    fmt: str = "pprof",
    out: Path | None = None,
    view: str | None = None,
    rules_dirs: Sequence[Path] = (),
) -> dict[str, Path]:
    """Write the bundle's flame views (or ``view``) in ``fmt``; where each went."""
    encoder = ENCODERS.get(fmt)
    if encoder is None:
        raise UsageError(f"unknown export format {fmt!r}; choose from {', '.join(ENCODERS)}")
    bundle = open_bundle(source)
    profiles = bundle_profiles(bundle, rules_dirs)
    chosen = choose_views(profiles, view, bundle.root)
    data = {v: encoder.encode(profiles[v]) for v in chosen}  # all of them before any file
    names = {v: f"{v}{encoder.suffix}" for v in chosen}
    target = open_export_target(bundle, names, out, one_asked=view is not None)
    return {v: target.write(v, data[v]) for v in chosen}
