import json
import random

import numpy as np
from locust import FastHttpUser, task

rng = np.random.default_rng(1)
BODIES = [json.dumps({"features": rng.standard_normal((16, 512)).round(3).tolist()}).encode() for _ in range(8)]


class Client(FastHttpUser):
    @task
    def score(self):
        self.client.post("/score", data=random.choice(BODIES), headers={"Content-Type": "application/json"})
