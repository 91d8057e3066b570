"""The perf probe's cache: a capture reuses this host's last probe instead of paying
1.7-2.6 s for it; what does not match this host and user, or is old, or could have been
planted by someone else, is probed again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from diagnose.collect.perf import probe as probe_mod
from diagnose.collect.perf.probe import (
    CACHE_MAX_AGE,
    FEATURES,
    Feature,
    PerfCapabilities,
    cached_probe,
    capabilities_for,
    read_cache,
    write_cache,
)
from diagnose.resources import cache_dir


def caps(ok: bool = True) -> PerfCapabilities:
    features = {
        n: Feature(n, ok, f"{n}: {'works' if ok else 'no'}", "" if ok else "fix") for n in FEATURES
    }
    return PerfCapabilities("/usr/bin/perf", "perf version 6.1", 2, True, features, 1.9)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "diagnose" / "perf-probe.json"


def test_a_written_probe_is_read_back_with_its_age(cache):
    write_cache(caps())
    got = read_cache("/usr/bin/perf")
    assert got is not None and got.cached_s is not None and 0 <= got.cached_s < 60
    assert got.features == caps().features and got.version == "perf version 6.1"
    assert got.to_dict()["cached_s"] is not None
    # private: 0600 in a 0700 directory
    assert cache.stat().st_mode & 0o777 == 0o600
    assert cache.parent.stat().st_mode & 0o777 == 0o700


def test_another_perf_binary_or_kernel_setting_is_probed_again(cache, monkeypatch):
    write_cache(caps())
    assert read_cache("/usr/bin/perf") is not None
    assert read_cache("/opt/other/perf") is None  # another binary
    monkeypatch.setattr(probe_mod, "read_paranoid", lambda: -1)  # perf_event_paranoid changed
    assert read_cache("/usr/bin/perf") is None


@pytest.mark.parametrize(
    ("age", "fresh"), [(CACHE_MAX_AGE - 60, True), (CACHE_MAX_AGE + 60, False)]
)
def test_an_old_probe_is_probed_again(cache, age, fresh):
    write_cache(caps())
    doc = json.loads(cache.read_text())
    doc["written"] -= age
    cache.write_text(json.dumps(doc))
    assert (read_cache("/usr/bin/perf") is not None) is fresh


def test_a_cache_someone_else_could_have_written_is_ignored(cache, tmp_path):
    write_cache(caps())
    os.chmod(cache.parent, 0o777)  # a directory others may write into
    assert read_cache("/usr/bin/perf") is None
    os.chmod(cache.parent, 0o700)
    planted = tmp_path / "planted.json"
    planted.write_text(cache.read_text())
    cache.unlink()
    cache.symlink_to(planted)  # never read through a link
    assert read_cache("/usr/bin/perf") is None


@pytest.mark.parametrize(
    "doc", ["not json", "[]", '{"key": 1}', json.dumps({"caps": {"features": {}}})]
)
def test_a_damaged_cache_is_no_cache(cache, doc):
    write_cache(caps())
    cache.write_text(doc)
    assert read_cache("/usr/bin/perf") is None


def test_from_dict_rejects_a_probe_of_other_features():
    d = caps().to_dict()
    d["features"].pop("delay")
    with pytest.raises(ValueError):
        PerfCapabilities.from_dict(d)
    assert PerfCapabilities.from_dict(caps().to_dict()).features == caps().features


def test_captures_reuse_the_probe_and_a_perf_that_does_not_run_is_not_kept(cache, monkeypatch):
    calls = []

    def fake_probe(perf=None, timeout=10.0):
        calls.append(perf)
        return broken if broken_now else caps()

    monkeypatch.setattr(probe_mod, "probe", fake_probe)
    monkeypatch.setattr(probe_mod, "find_perf", lambda: "/usr/bin/perf")
    broken = PerfCapabilities("/usr/bin/perf", "", 2, True, caps(ok=False).features)
    broken_now = True
    assert not cached_probe().has("cpu_clock") and not cache.exists()  # not remembered
    broken_now = False
    first = cached_probe()
    second = cached_probe()
    assert len(calls) == 2 and first.cached_s is None and second.cached_s is not None
    assert second.has("delay")


def test_one_probe_per_capture_key(cache, monkeypatch):
    calls = []
    monkeypatch.setattr(probe_mod, "cached_probe", lambda: calls.append(1) or caps())
    a = capabilities_for(("capture", 1))
    b = capabilities_for(("capture", 1))
    assert a is b and len(calls) == 1
    capabilities_for(("capture", 2))
    assert len(calls) == 2


@pytest.mark.parametrize(
    ("xdg", "under"),
    [("/var/cache/me", "/var/cache/me"), ("relative/dir", "HOME/.cache"), ("", "HOME/.cache")],
)
def test_the_probe_and_the_poll_fix_share_one_cache_directory(monkeypatch, tmp_path, xdg, under):
    # an absolute $XDG_CACHE_HOME, else ~/.cache (a relative one would depend on the
    # directory diagnose runs in: ignored, as the XDG specification says)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    want = Path(under.replace("HOME", str(tmp_path))) / "diagnose"
    assert cache_dir() == want
    assert Path(probe_mod.cache_path()) == want / "perf-probe.json"
