"""Churn-risk endpoint: a small GRU over a customer's last 30 days of activity."""
import asyncio
from concurrent.futures import ThreadPoolExecutor

import torch
from fastapi import FastAPI

torch.set_num_threads(1)
torch.manual_seed(1)


class ChurnModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(16, 64, batch_first=True)
        self.out = torch.nn.Linear(64, 1)

    def forward(self, x):
        _, h = self.rnn(x)
        return torch.sigmoid(self.out(h[-1]))


model = ChurnModel().eval()
ACTIVITY = torch.randn(1000, 1, 30, 16)
executor = ThreadPoolExecutor(max_workers=4)
app = FastAPI()


def run_model(customer: int) -> float:
    with torch.inference_mode():
        return float(model(ACTIVITY[customer % len(ACTIVITY)])[0, 0])


@app.get("/churn")
async def churn(customer: int = 0):
    loop = asyncio.get_running_loop()
    risk = await loop.run_in_executor(executor, run_model, customer)
    return {"customer": customer, "risk": round(risk, 4)}
