"""Query intent classifier: a small torch text CNN over hashed tokens."""
import torch
from flask import Flask, jsonify, request

torch.set_num_threads(1)
torch.manual_seed(0)


class Classifier(torch.nn.Module):
    def __init__(self, vocab=20000, dim=256, classes=12):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.conv = torch.nn.Conv1d(dim, 512, 5, padding=2)
        self.conv2 = torch.nn.Conv1d(512, 512, 5, padding=2)
        self.out = torch.nn.Linear(512, classes)

    def forward(self, ids):
        x = self.emb(ids).transpose(1, 2)
        x = torch.relu(self.conv2(torch.relu(self.conv(x))))
        return self.out(x.max(dim=2).values)


model = Classifier().eval()
app = Flask(__name__)


@app.post("/intent")
def intent():
    words = request.get_json()["query"].split()
    ids = torch.tensor([[hash(w) % 20000 for w in words][:64]])
    with torch.inference_mode():
        y = model(ids)[0]
    return jsonify({"intent": int(y.argmax()), "score": float(y.max())})
