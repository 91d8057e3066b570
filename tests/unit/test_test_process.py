"""The test process runs the product as users run it: collecting every test module imports
nothing that patches the standard library. locust's package runs gevent's monkey.patch_all()
on import; once it had been imported at collection, every thread of the test process (the
collectors of in-process captures) was a greenlet, and a lock held across a greenlet switch
hung the suite (tests.conftest.require_locust checks for locust without importing it)."""

from __future__ import annotations

import sys


def test_nothing_monkey_patched_the_test_process():
    assert "locust" not in sys.modules
    if "gevent.monkey" in sys.modules:
        from gevent import monkey

        assert not monkey.is_module_patched("threading")
        assert not monkey.is_module_patched("subprocess")
