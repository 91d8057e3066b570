import json
import random

from locust import FastHttpUser, task

rng = random.Random(4)
BODIES = [json.dumps({"user": [round(rng.gauss(0, 1), 3) for _ in range(128)],
                      "candidates": rng.sample(range(50_000), 512)}).encode() for _ in range(32)]


class Client(FastHttpUser):
    @task
    def rank(self):
        self.client.post("/rank", data=random.choice(BODIES), headers={"Content-Type": "application/json"})
