import json
import random

import numpy as np
from locust import FastHttpUser, task

rng = np.random.default_rng(5)
BODIES = [json.dumps({"weights": rng.uniform(0.5, 1.5, 128).round(3).tolist(),
                      "query": rng.standard_normal(128).round(3).tolist(),
                      "candidates": rng.choice(200_000, 500, replace=False).tolist()}).encode() for _ in range(16)]


class Client(FastHttpUser):
    @task
    def rank(self):
        self.client.post("/rank", data=random.choice(BODIES), headers={"Content-Type": "application/json"})
