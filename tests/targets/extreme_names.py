"""A target whose names try to be *run* or to break diagnose's own formats (pure Python, runs
on 3.8+); tests/targets/hostile.py covers markup and terminal escapes in the reports.

- thread names that are Jinja2, str.format and printf templates, shell command
  substitutions (each would create the file given by --marker if anything ran it),
  spreadsheet formulas, CSV quoting and separators, the folded format's separators and a
  trailing " 123" weight, Unicode line and paragraph separators, a right-to-left override;
- kernel thread names (``comm``) with the same kind of text, and bytes that are not UTF-8;
- busy functions named and placed the same way (a function named ``evil (fake.py:1)``, a file
  name with ``:99`` in it), so the payloads reach stacks, the lock site and the verdict.

Prints "ready" once every thread is started; exits after --seconds.
"""

import argparse
import ctypes
import ctypes.util
import sys
import threading
import time

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=60)
p.add_argument("--marker", required=True, help="a path that must never be created")
args = p.parse_args()
M = args.marker

NAMES = [
    "{{ 7*7 }}{% for x in range(3) %}{{x}}{% endfor %}",
    "{lock_top_waiters} {0.__class__.__mro__} {__import__}",
    "%s%s%n%x %(secret)s",
    f"$(touch {M})`touch {M}`;touch {M}",
    '=HYPERLINK("http://x","y")',
    'a,b,"c"\nd\re',
    "frame;other frame 123",
    "line\u2028paragraph\u2029next\x85\x0c\x0b",
    "\u202eevil\u202c",
]
COMMS = [b"{{7*7}}", b"$(touch x)", b"a,b;c 12", b"\xff\xfe\n{x}"]
FUNCS = [
    "{{ 7*7 }}",
    "{0.__globals__}",
    f"$(touch {M})",
    "evil (fake.py:1)",
    "a;b 42",
    "x\u2028y",
]
FILE = "<{{ 7*7 }}>;with:99,comma.py"

SOURCE = """
def work(lock, stop):
    while not stop.is_set():
        with lock:
            end = time.perf_counter() + 0.01
            while time.perf_counter() < end:
                pass
"""

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def named_work(name):
    namespace = {"time": time}
    exec(compile(SOURCE, FILE, "exec"), namespace)
    fn = namespace["work"]
    code = fn.__code__.replace(co_name=name)
    if sys.version_info >= (3, 11):
        code = code.replace(co_qualname=name)
    fn.__code__ = code
    return fn


def run(i, lock, stop):
    if i < len(COMMS):
        _libc.prctl(15, ctypes.c_char_p(COMMS[i]), 0, 0, 0)  # PR_SET_NAME
    named_work(FUNCS[i % len(FUNCS)])(lock, stop)


LOCK = threading.Lock()
stop = threading.Event()
for i, name in enumerate(NAMES):
    threading.Thread(target=run, args=(i, LOCK, stop), name=name, daemon=True).start()
print("ready", flush=True)
stop.wait(args.seconds)
stop.set()
sys.exit(0)
