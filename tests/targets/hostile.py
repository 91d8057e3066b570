"""A hostile target: every string it controls tries to become markup, script or a terminal
escape in the report (pure Python, runs on 3.8+).

- thread names: a <script> tag, an attribute breaker, Markdown table/link syntax, ANSI
  escapes and other control characters, a newline and a 4000-character name;
- kernel thread names (``comm``, set with prctl): HTML and bytes that are not UTF-8;
- the code the threads run: a function and a file name with HTML, ANSI escapes and
  newlines; four threads contend on a lock inside it, so the lock hot spot, the verdict's
  headline and the flame graphs all carry those names; the function name is long too.

Not here, because py-spy 0.4 never passes them on: a thread name that is not valid Unicode
(a lone surrogate) or longer than 4096 characters makes py-spy drop *every* thread's name,
and a function name with a lone surrogate drops that frame. Bytes that are not UTF-8 reach
the bundle through the kernel thread names instead.

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
args = p.parse_args()

SCRIPT = "<script>alert(1)</script>"
THREAD_NAMES = [
    SCRIPT,
    "\"'><img src=x onerror=alert(2)>",
    "| a | b |\n[x](javascript:alert(3)) **bold** `tick`",
    "\x1b[31mred\x1b[0m\x1b]0;title\x07\r\x08\x7f",
    "L" * 4000,
]
FUNC = '<img src=x onerror="alert(4)">\n\x1b[2J|`work`' + "_" * 2000
FILE = "</script><script>alert(5)</script>\n\x1b[1m<b>file</b>.py"
COMMS = [b"<b>x</b>\xff\xfe", b"\x1b[31m\xc3(&amp;"]

SOURCE = """
def work(lock, stop):
    while not stop.is_set():
        with lock:
            end = time.perf_counter() + 0.02
            while time.perf_counter() < end:
                pass
"""

namespace = {"time": time}
exec(compile(SOURCE, FILE, "exec"), namespace)
work = namespace["work"]
code = work.__code__.replace(co_name=FUNC)
if sys.version_info >= (3, 11):
    code = code.replace(co_qualname=FUNC)
work.__code__ = code

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
PR_SET_NAME = 15


def run(i, lock, stop):
    if i < len(COMMS):
        _libc.prctl(PR_SET_NAME, ctypes.c_char_p(COMMS[i]), 0, 0, 0)
    work(lock, stop)


LOCK = threading.Lock()
stop = threading.Event()
for i, name in enumerate(THREAD_NAMES):
    threading.Thread(target=run, args=(i, LOCK, stop), name=name, daemon=True).start()
print("ready", flush=True)
stop.wait(args.seconds)
stop.set()
sys.exit(0)
