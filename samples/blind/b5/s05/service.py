"""Document-embedding daemon: a multiprocessing pool of encoder workers fed by in-process client threads.

Loads the encoder in each worker, then its client threads submit documents in a closed loop
and write one record per completed document to SVC_STATS_PATH.

Env:
  SVC_WORKERS     encoder processes (default 2)
  SVC_CLIENTS     client threads (default 4)
  SVC_LAYERS / SVC_HIDDEN / SVC_HEADS / SVC_FFN   encoder size
  SVC_SEQ         tokens per document (default 128)
"""
import multiprocessing as mp
import os
import random
import threading
import time

WORKERS = int(os.environ.get("SVC_WORKERS", "2"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "4"))
LAYERS = int(os.environ.get("SVC_LAYERS", "6"))
HIDDEN = int(os.environ.get("SVC_HIDDEN", "512"))
HEADS = int(os.environ.get("SVC_HEADS", "8"))
FFN = int(os.environ.get("SVC_FFN", "2048"))
SEQ = int(os.environ.get("SVC_SEQ", "128"))
STATS = os.environ.get("SVC_STATS_PATH")
READY = os.environ.get("SVC_READY_PATH")

_enc = None
_tok = None


def _corpus(rng, n):
    syl = ["ba", "ke", "li", "mo", "nu", "ra", "se", "ti", "vo", "za", "pre", "con", "ment", "tion", "al"]
    words = ["".join(rng.choice(syl) for _ in range(rng.randint(1, 4))) for _ in range(2000)]
    return [" ".join(rng.choices(words, k=rng.randint(60, 200))) for _ in range(n)], words


def init_worker():
    global _enc, _tok
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import BertConfig, BertModel

    torch.set_num_threads(1)
    torch.manual_seed(0)
    docs, _ = _corpus(random.Random(0), 2000)
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(docs, trainers.WordPieceTrainer(vocab_size=3000, special_tokens=["[UNK]", "[PAD]"]))
    tok.enable_truncation(SEQ)
    tok.enable_padding(length=SEQ, pad_id=tok.token_to_id("[PAD]"))
    cfg = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                     num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=SEQ + 2)
    _enc = BertModel(cfg).eval()
    _tok = tok


def embed(text):
    import torch

    enc = _tok.encode(text)
    ids = torch.tensor([enc.ids])
    mask = torch.tensor([enc.attention_mask])
    with torch.inference_mode():
        h = _enc(input_ids=ids, attention_mask=mask).last_hidden_state
        v = (h * mask[..., None]).sum(1) / mask.sum()
        v = torch.nn.functional.normalize(v, dim=-1)
    return v[0].numpy().astype("float16").tobytes()


def main():
    ctx = mp.get_context("spawn")
    pool = ctx.Pool(WORKERS, initializer=init_worker)
    pool.map(len, ["warm"] * WORKERS * 4)
    pool.apply(embed, ("warm up",))
    docs, _ = _corpus(random.Random(42), 500)
    out = open(STATS, "a", buffering=1 << 16) if STATS else None
    rec_mu = threading.Lock()
    stop = threading.Event()

    def client(i):
        rng = random.Random(i)
        last = time.time()
        while not stop.is_set():
            t0 = time.time()
            try:
                pool.apply(embed, (rng.choice(docs),))
                ok = "ok"
            except Exception:
                ok = "err"
            t1 = time.time()
            if out:
                with rec_mu:
                    out.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} {ok}\n")
                    if t1 - last > 0.3:
                        out.flush()
                        last = t1

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    if READY:
        open(READY, "w").close()
    try:
        while True:
            time.sleep(1)
            if out:
                with rec_mu:
                    out.flush()
    finally:
        stop.set()
        pool.terminate()


if __name__ == "__main__":
    main()
