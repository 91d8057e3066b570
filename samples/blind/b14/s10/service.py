"""Delivery-promise API: asks the inventory service for stock and estimates a delivery window."""
import http.client
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
from flask import Flask, jsonify, request

PORT = 18810
INVENTORY_PORT = 18860
_local = threading.local()
rng = np.random.default_rng(12)
WAREHOUSE_W = rng.random((8, 4)).astype(np.float32)
app = Flask(__name__)


def inventory_get(sku):
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = http.client.HTTPConnection("127.0.0.1", INVENTORY_PORT, timeout=10)
    try:
        conn.request("GET", f"/stock/{sku}")
        resp = conn.getresponse()
        return json.loads(resp.read())
    except (http.client.HTTPException, OSError):
        _local.conn = None
        conn.close()
        raise


@app.get("/promise")
def promise():
    sku = int(request.args.get("sku", 0))
    stock = np.array(inventory_get(sku)["stock"], dtype=np.float32)
    days = (stock @ WAREHOUSE_W).argmax() + 1
    return jsonify(sku=sku, days=int(days), in_stock=bool(stock.sum() > 0))


def wait_inventory():
    for _ in range(100):
        try:
            c = http.client.HTTPConnection("127.0.0.1", INVENTORY_PORT, timeout=1)
            c.request("GET", "/stock/1"); c.getresponse().read(); c.close()
            return
        except OSError:
            time.sleep(0.1)


if __name__ == "__main__":
    child = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "inventory.py"),
                              str(INVENTORY_PORT)])
    wait_inventory()
    try:
        app.run(host="127.0.0.1", port=PORT, threaded=True)
    finally:
        child.terminate()
