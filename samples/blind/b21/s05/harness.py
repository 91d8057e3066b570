"""Run a service under load and report throughput, latency and CPU.

Usage (normally via run.sh):
  python harness.py --variant a|b --seconds N [options] -- service argv...
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

PY = "/work/main/.venv/bin/python"
LOCUST = "/work/main/.venv/bin/locust"
CLK = os.sysconf("SC_CLK_TCK")

children = []  # the session leaders we started (Popen objects)
tmpdir = tempfile.mkdtemp(prefix="b21run-")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def session_pids(sid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rfind(")") + 2:].split()
        if int(rest[3]) == sid:
            out.append((int(d), rest))
    return out


def tree_cpu_seconds(sid):
    tot = 0
    for _pid, rest in session_pids(sid):
        # fields after comm: state(0) ppid(1) pgrp(2) session(3) ... utime(11) stime(12) cutime(13) cstime(14)
        tot += int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14])
    return tot / CLK


def kill_session(sid, sig_first=signal.SIGTERM, grace=4.0, reaped=False):
    # a reaped leader's PID may be a new session leader's by now (PIDs wrap in seconds
    # beside a process-per-request service): then only its old session's members
    def members():
        return [(p, r) for p, r in session_pids(sid) if not (reaped and p == sid)]

    if not reaped:
        try:
            os.killpg(sid, sig_first)
        except ProcessLookupError:
            pass
    for p, _ in members():
        try:
            os.kill(p, sig_first)
        except ProcessLookupError:
            pass
    t = time.time() + grace
    while time.time() < t and members():
        time.sleep(0.1)
    for p, _ in members():
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if not reaped:
        try:
            os.killpg(sid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def cleanup():
    for proc in reversed(children):
        kill_session(proc.pid, reaped=proc.returncode is not None)
        proc.poll()
    children.clear()


def on_signal(signum, frame):
    cleanup()
    sys.exit(128 + signum)


def parse_env(items):
    env = {}
    for it in items or []:
        k, _, v = it.partition("=")
        env[k] = v
    return env


def wait_port(port, timeout, proc):
    t = time.time() + timeout
    while time.time() < t:
        if proc.poll() is not None:
            raise SystemExit(f"service exited early rc={proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("service did not come up")


def wait_file(path, timeout, proc):
    t = time.time() + timeout
    while time.time() < t:
        if proc.poll() is not None:
            raise SystemExit(f"service exited early rc={proc.returncode}")
        if os.path.exists(path):
            return
        time.sleep(0.2)
    raise SystemExit("service did not come up")


def read_records(paths, t0, t1):
    lat = []
    errors = 0
    for path in paths:
        try:
            with open(path) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) < 2:
                        continue
                    try:
                        ts = float(parts[0]); ms = float(parts[1])
                    except ValueError:
                        continue
                    if t0 <= ts <= t1:
                        if len(parts) > 2 and parts[2] != "ok":
                            errors += 1
                        else:
                            lat.append(ms)
        except OSError:
            pass
    return lat, errors


def pct(vals, q):
    if not vals:
        return None
    vals = sorted(vals)
    i = min(len(vals) - 1, max(0, int(round(q * (len(vals) - 1)))))
    return round(vals[i], 2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variant", choices=["a", "b"])
    ap.add_argument("seconds", type=float)
    ap.add_argument("--mode", choices=["locust", "pipe", "self"], default="locust")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--env-a", action="append", default=[])
    ap.add_argument("--env-b", action="append", default=[])
    ap.add_argument("--load-env-a", action="append", default=[])
    ap.add_argument("--load-env-b", action="append", default=[])
    ap.add_argument("--producer", default="producer.py")
    argv = sys.argv[1:]
    i = argv.index("--")
    a = ap.parse_args(argv[:i])
    cmd = argv[i + 1:]

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    env = dict(os.environ)
    env.update(parse_env(a.env))
    env.update(parse_env(a.env_a if a.variant == "a" else a.env_b))
    load_env = dict(os.environ)
    load_env.update(parse_env(a.load_env_a if a.variant == "a" else a.load_env_b))
    stats_path = os.path.join(tmpdir, "svc-records.txt")
    ready_path = os.path.join(tmpdir, "ready")
    env["SVC_STATS_PATH"] = stats_path
    env["SVC_READY_PATH"] = ready_path
    env.setdefault("PYTHONUNBUFFERED", "1")
    svc_log = open(os.path.join(tmpdir, "service.log"), "w")

    try:
        stdin = subprocess.DEVNULL
        rfd = wfd = None
        if a.mode == "pipe":
            rfd, wfd = os.pipe()
            stdin = rfd
        svc = subprocess.Popen(cmd, env=env, stdin=stdin, stdout=svc_log, stderr=svc_log,
                               start_new_session=True)
        children.append(svc)
        if rfd is not None:
            os.close(rfd)
        if a.mode == "locust":
            wait_port(a.port, 120, svc)
        else:
            wait_file(ready_path, 120, svc)
        print(f"PID {svc.pid}", flush=True)

        rec_paths = [stats_path]
        lg_log = open(os.path.join(tmpdir, "load.log"), "w")
        if a.mode == "locust":
            rec = os.path.join(tmpdir, "locust-records.txt")
            rec_paths = [rec]
            load_env["B4_RECORDS"] = rec
            lcmd = [LOCUST, "-f", "locustfile.py", "--headless", "-u", str(a.users), "-r", str(a.users),
                    "-H", f"http://127.0.0.1:{a.port}", "-t", "900s", "--only-summary",
                    "--loglevel", "WARNING"]
            lg = subprocess.Popen(lcmd, env=load_env, stdout=lg_log, stderr=lg_log,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
            children.append(lg)
            time.sleep(2.0)  # locust start-up
        elif a.mode == "pipe":
            lg = subprocess.Popen([PY, a.producer], env=load_env, stdout=wfd, stderr=lg_log,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
            children.append(lg)
            os.close(wfd)
        time.sleep(a.warmup)
        t0 = time.time(); c0 = tree_cpu_seconds(svc.pid)
        time.sleep(a.seconds)
        t1 = time.time(); c1 = tree_cpu_seconds(svc.pid)
        if svc.poll() is not None:
            log("service died during the run; see", tmpdir)
        time.sleep(1.2)  # let writers flush their records
        if a.mode == "locust":
            kill_session(lg.pid, signal.SIGTERM, grace=6.0, reaped=lg.returncode is not None)
        lat, errors = read_records(rec_paths, t0, t1)
        win = t1 - t0
        res = {
            "variant": a.variant,
            "seconds": round(win, 2),
            "requests": len(lat),
            "errors": errors,
            "throughput": round(len(lat) / win, 2),
            "p50_ms": pct(lat, 0.50),
            "p99_ms": pct(lat, 0.99),
            "cpu_cores": round((c1 - c0) / win, 3),
        }
    finally:
        cleanup()
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
