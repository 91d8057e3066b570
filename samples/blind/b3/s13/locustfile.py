import json
import random

from locust import FastHttpUser, task

rng = random.Random(9)
BODIES = [json.dumps({"rows": [[round(rng.gauss(0, 1), 2) for _ in range(256)] for _ in range(8)],
                      "tag": f"t{i % 4}"}).encode() for i in range(16)]


class Client(FastHttpUser):
    @task
    def score(self):
        self.client.post("/score", data=random.choice(BODIES), headers={"Content-Type": "application/json"})
