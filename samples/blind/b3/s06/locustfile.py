import json
import random

from locust import FastHttpUser, task

WORDS = ("order delivery refund late broken item support account login error payment card shipping "
         "tracking invoice great terrible excellent slow crash please thanks").split()


def text(rng):
    s = " ".join(rng.choice(WORDS) for _ in range(rng.randint(450, 650)))
    return (s + " &amp; see https://shop.example.com/o/123 or mail help@example.com!!!! sooooo bad... \u00e9t\u00e9 ")


rng = random.Random(7)
BODIES = [json.dumps({"texts": [text(rng) for _ in range(4)]}).encode() for _ in range(16)]


class Client(FastHttpUser):
    @task
    def predict(self):
        self.client.post("/predict", data=random.choice(BODIES), headers={"Content-Type": "application/json"})
