import json
import random

from locust import FastHttpUser, task

rng = random.Random(2)
BODIES = [json.dumps({"user": rng.randrange(100000), "item": [round(rng.gauss(0, 1), 3) for _ in range(64)]}).encode()
          for _ in range(64)]


class Client(FastHttpUser):
    @task
    def score(self):
        self.client.post("/score", data=random.choice(BODIES), headers={"Content-Type": "application/json"})
