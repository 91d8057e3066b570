"""The locustfile for the sweep samples: closed-loop clients that POST a short text to /infer.

Each locust user is one client with one keep-alive connection that sends its next request
as soon as the answer arrives (no think time), so N users are N concurrent requests, the
concurrency a stepped load test raises. FastHttpUser (geventhttpclient) costs locust about
a third of the CPU per request that HttpUser (requests) does: on a small host that keeps the
load generator from becoming the bottleneck.

    diagnose sweep PID --load samples/sweep_locustfile.py --host http://127.0.0.1:8000 --steps 1,2,4,8,16
"""

from locust import FastHttpUser, constant, task

TEXT = (
    "The quick brown fox jumps over the lazy dog, then asks the model whether the dog "
    "minded; the model, being a classifier, answers with a label and nothing else."
)


class InferenceClient(FastHttpUser):
    wait_time = constant(0)

    @task
    def infer(self):
        self.client.post("/infer", json={"text": TEXT})
