"""Geo-cluster assignment service: maps a batch of embedded points to their nearest centroids."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np
from flask import Flask, jsonify, request

METHOD = os.environ.get("SVC_DISTANCE", "direct")
rng = np.random.default_rng(5)
CENTROIDS = rng.standard_normal((4096, 32)).astype(np.float32)
CENTROID_SQ = (CENTROIDS ** 2).sum(1)
POINTS = rng.standard_normal((64, 128, 32)).astype(np.float32)

app = Flask(__name__)


def nearest(points):
    if METHOD == "gemm":
        d = (points ** 2).sum(1)[:, None] + CENTROID_SQ[None, :] - 2.0 * (points @ CENTROIDS.T)
        return d.argmin(1), d.min(1)
    idx = np.empty(len(points), dtype=np.int64)
    dist = np.empty(len(points), dtype=np.float32)
    for i, p in enumerate(points):
        d = ((CENTROIDS - p) ** 2).sum(1)
        j = d.argmin()
        idx[i] = j
        dist[i] = d[j]
    return idx, dist


@app.get("/assign")
def assign():
    batch = int(request.args.get("batch", 0)) % len(POINTS)
    idx, dist = nearest(POINTS[batch])
    counts = np.bincount(idx, minlength=len(CENTROIDS))
    return jsonify(batch=batch, clusters=int((counts > 0).sum()), mean_dist=float(dist.mean()))
