import json
import random

from locust import FastHttpUser, task

WORDS = ("order delivery refund late broken item support account login error payment card shipping "
         "tracking invoice great terrible excellent slow crash please thanks").split()
rng = random.Random(3)
BODIES = [json.dumps({"text": " ".join(rng.choice(WORDS) for _ in range(110))}).encode() for _ in range(16)]


class Client(FastHttpUser):
    @task
    def embed(self):
        self.client.post("/embed", data=random.choice(BODIES), headers={"Content-Type": "application/json"})
