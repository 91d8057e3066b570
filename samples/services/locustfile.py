"""The zoo's load: one locust user class, shaped by each sample's sample.toml [load].

Run by benchmarks/zoo.py as ``locust -f samples/services/locustfile.py --headless ...``
in its own process group (never a child of the service), with:

  ZOO_PATH      the endpoint (default /predict); "{key}" in it becomes a random number
                per request (keys a cache has not seen)
  ZOO_PAYLOAD   the body: text:N | jpeg:SIZE | json:{...} (zoolib.payload); empty: GET
  ZOO_WAIT      "MIN,MAX" seconds a user waits between its requests (default 0,0)

FastHttpUser (geventhttpclient) keeps locust's own CPU low on a 2-core host.
"""

import os
import random

from locust import FastHttpUser, between, task
from zoolib import payload

PATH = os.environ.get("ZOO_PATH", "/predict")
SPEC = os.environ.get("ZOO_PAYLOAD", "")
BODY, CONTENT_TYPE = payload(SPEC) if SPEC else (b"", "")
WAIT_MIN, WAIT_MAX = (float(x) for x in os.environ.get("ZOO_WAIT", "0,0").split(","))


class Client(FastHttpUser):
    wait_time = between(WAIT_MIN, WAIT_MAX)

    @task
    def call(self) -> None:
        path = PATH.replace("{key}", str(random.randrange(10**9))) if "{key}" in PATH else PATH
        if BODY:
            self.client.post(path, data=BODY, headers={"Content-Type": CONTENT_TYPE}, name=PATH)
        else:
            self.client.get(path, name=PATH)
