"""Headless Chromium for the browser tests (Debian's ``chromium`` and ``chromium-driver``,
driven by selenium, which is given the driver's path so that it downloads nothing).

Each missing piece is named in the skip reason with its fix: chromium, chromedriver, or the
selenium package. Under CI (``CI`` set: .ci/run installs them) a missing piece fails the
test instead: a browser test skipped in CI is a test that never ran.

Screenshots are kept as test artefacts in ``$DIAGNOSE_TEST_ARTIFACTS`` (default
``test-artifacts/`` at the top of the checkout, ignored by git).
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def _find(name: str, debian_path: str) -> str | None:
    return shutil.which(name) or (debian_path if Path(debian_path).is_file() else None)


def missing() -> str:
    """What this host lacks to run the browser tests, with the fix ("" when nothing)."""
    lacks = []
    if _find("chromium", "/usr/bin/chromium") is None:
        lacks.append("chromium (apt-get install -y chromium)")
    if _find("chromedriver", "/usr/bin/chromedriver") is None:
        lacks.append("chromedriver (apt-get install -y chromium-driver)")
    if importlib.util.find_spec("selenium") is None:
        lacks.append("the selenium package (pip install -e '.[test]')")
    return "needs " + " and ".join(lacks) if lacks else ""


def require_browser() -> None:
    why = missing()
    if why and os.environ.get("CI"):
        pytest.fail(f"{why}: CI installs it (.ci/run), so a browser test may not be skipped")
    if why:
        pytest.skip(why)


@contextlib.contextmanager
def chromium(width: int = 1366, height: int = 900) -> Iterator[Any]:
    """A headless Chromium with a fresh profile and a window of ``width`` x ``height``
    (default: a laptop screen); always quit."""
    require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="diagnose-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(_find("chromium", "/usr/bin/chromium"))
    for flag in [*FLAGS, f"--window-size={width},{height}", f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(
        service=Service(executable_path=str(_find("chromedriver", "/usr/bin/chromedriver"))),
        options=opts,
    )
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def artifacts_dir() -> Path:
    out = Path(os.environ.get("DIAGNOSE_TEST_ARTIFACTS") or ROOT / "test-artifacts")
    out.mkdir(parents=True, exist_ok=True)
    return out


def full_page_screenshot(driver: Any, name: str) -> Path:
    """The whole page (not only the window) as a PNG in the artefacts folder."""
    size = driver.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
    )
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1},
        },
    )
    path = artifacts_dir() / name
    path.write_bytes(base64.b64decode(shot["data"]))
    return path
