"""Judge stored first-sight bundles of blind batches again with the current code, against
their labels (training data now: a replay, not a blind score). The bundles are not in the
repository (hundreds of MB); point --bundles at where the scoring kept them.

    python samples/blind/replay.py OUT.jsonl [BATCH...] [--bundles DIR]

reads DIR/<batch>-first-sight/<id>.bundle (default /work/blind/score) and
samples/blind/<batch>/<id>/label.toml, writes one JSON line per service to OUT.jsonl and a
table to stdout."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import tomllib

LABELS = Path(__file__).resolve().parent
DIAGNOSE = str(Path(sys.executable).with_name("diagnose"))


def judge(batch: str, sid: str, bundle: Path, label: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="replay-") as out:
        p = subprocess.run(
            [DIAGNOSE, "report", str(bundle), "--json", "-o", out],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    try:
        report, _ = json.JSONDecoder().raw_decode(p.stdout)
        v = report["verdict"]
        sv = (report.get("service") or {}).get("verdict") or {}
        cat = sv.get("primary") or v["primary"]
        kind = sv.get("kind") if sv else v.get("kind")
        conf = sv.get("confidence") if sv else v.get("confidence")
    except (ValueError, KeyError) as exc:
        cat, kind, conf = "error", str(exc)[:80], 0.0
    return {
        "batch": batch, "id": sid, "label": f"{label['category']}/{label['kind']}",
        "verdict": f"{cat}/{kind}", "confidence": conf, "cat_ok": cat == label["category"],
        "kind_ok": cat == label["category"] and kind == label["kind"],
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("batches", nargs="*", default=["b3", "b4", "b5", "b6"])
    ap.add_argument("--bundles", type=Path, default=Path("/work/blind/score"))
    args = ap.parse_args()
    jobs = []
    for b in args.batches:
        for bundle in sorted((args.bundles / f"{b}-first-sight").glob("s*.bundle")):
            sid = bundle.name.split(".")[0]
            path = LABELS / b / sid / "label.toml"
            if not path.exists() or not (bundle / "manifest.json").exists():
                continue
            label = tomllib.loads(path.read_text())
            if not str(label.get("verdict", "")).startswith("dropped"):
                jobs.append((b, sid, bundle, label))
    with ThreadPoolExecutor(2) as pool:
        rows = list(pool.map(lambda job: judge(*job), jobs))
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for r in rows:
        mark = "OK" if r["kind_ok"] else ("cat" if r["cat_ok"] else "XX")
        print(f"{r['batch']} {r['id']} {r['label']:35} {r['verdict']:35} "
              f"{r['confidence'] or 0:.2f} {mark}")  # fmt: skip
    cat, kind = sum(r["cat_ok"] for r in rows), sum(r["kind_ok"] for r in rows)
    print(f"category {cat}/{len(rows)}, kind {kind}/{len(rows)}")


if __name__ == "__main__":
    main()
