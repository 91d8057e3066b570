"""diagnose's cache directory is reached from / one component at a time: a directory or a
link on the way that another user controls is never followed, so root running with another
user's HOME creates and writes nothing where that user points (issue 40, finding 8)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from diagnose.bundle.safedir import SafeDir, UnsafeDirectory, open_trusted_path
from diagnose.collect.perf.probe import read_cache, write_cache
from diagnose.resources import cache_dir
from tests.unit.test_perf_probe_cache import caps

NOBODY = 65534


def test_another_users_home_with_a_linked_cache_is_not_used(tmp_path, monkeypatch):
    # GIVEN HOME of another user whose ~/.cache links to a directory of the attacker's choice
    home, aim = tmp_path / "home" / "alice", tmp_path / "etc"
    home.mkdir(parents=True)
    aim.mkdir()
    (home / ".cache").symlink_to(aim)
    os.lchown(home / ".cache", NOBODY, NOBODY)
    os.chown(home, NOBODY, NOBODY)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    # WHEN root opens its cache, and caches a perf probe
    with pytest.raises(UnsafeDirectory, match="uid 65534"):
        SafeDir.private(cache_dir())
    write_cache(caps(), str(cache_dir() / "perf-probe.json"))
    # THEN nothing was created at the link's target
    assert list(aim.iterdir()) == []
    assert read_cache("/usr/bin/perf", str(cache_dir() / "perf-probe.json")) is None


def test_a_link_of_another_user_is_not_followed(tmp_path):
    (tmp_path / "aim").mkdir()
    (tmp_path / "cache").symlink_to(tmp_path / "aim")
    os.lchown(tmp_path / "cache", NOBODY, NOBODY)
    with pytest.raises(UnsafeDirectory, match="link of uid 65534"):
        SafeDir.private(tmp_path / "cache" / "diagnose")
    assert list((tmp_path / "aim").iterdir()) == []


def test_a_directory_others_may_write_is_not_trusted_unless_sticky(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(UnsafeDirectory, match="others may write"):
        SafeDir.private(shared / "diagnose")
    os.chmod(shared, 0o1777)  # as /tmp: others cannot replace what is ours in it
    SafeDir.private(shared / "diagnose").close()


def test_our_own_links_are_followed(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")  # relative, ours
    held = SafeDir.private(tmp_path / "link" / "sub" / "diagnose")
    held.close()
    assert (tmp_path / "real" / "sub" / "diagnose").is_dir()
    fd = open_trusted_path(Path("/usr/lib/../bin"), create=False)
    try:
        assert os.path.samestat(os.fstat(fd), os.stat("/usr/bin"))
    finally:
        os.close(fd)
