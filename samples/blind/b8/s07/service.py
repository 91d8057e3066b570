import asyncio, os, random, threading, time
from concurrent.futures import ThreadPoolExecutor
import torch
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import BertWordPieceTokenizer
from transformers import BertConfig, BertModel
import uvicorn

PORT = int(os.environ.get("SVC_PORT", "18671"))
SIZE = os.environ.get("SVC_MODEL", "base")
SIZES = {"base": dict(num_hidden_layers=6, hidden_size=384, num_attention_heads=6, intermediate_size=1536),
         "small": dict(num_hidden_layers=2, hidden_size=384, num_attention_heads=6, intermediate_size=1536)}

rng = random.Random(0)
letters = "abcdefghijklmnopqrstuvwxyz"
words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(2, 8))) for _ in range(6000)})
vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(letters) + ["##" + c for c in letters] + words
vocab = list(dict.fromkeys(vocab))
tokenizer = BertWordPieceTokenizer({w: i for i, w in enumerate(vocab)}, lowercase=True)
tokenizer.enable_truncation(128)

torch.manual_seed(0)
cfg = BertConfig(vocab_size=len(vocab), max_position_embeddings=256, **SIZES[SIZE])
encoder = BertModel(cfg).eval()
head = torch.nn.Linear(cfg.hidden_size, 3).eval()
executor = ThreadPoolExecutor(max_workers=2)


def classify(text):
    enc = tokenizer.encode(text)
    ids = torch.tensor([enc.ids])
    with torch.inference_mode():
        h = encoder(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[:, 0]
        p = torch.softmax(head(h), -1)[0]
    return int(p.argmax()), float(p.max())


app = FastAPI()


class Req(BaseModel):
    text: str


@app.post("/classify")
async def classify_endpoint(req: Req):
    label, score = await asyncio.get_running_loop().run_in_executor(executor, classify, req.text)
    return {"label": label, "score": score}


def _expire():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "600")))
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
