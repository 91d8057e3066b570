import io, os, queue, threading, time
import numpy as np
import torch
from PIL import Image

torch.set_num_threads(1)
DECODE = os.environ.get("SVC_DECODE", "full")
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))
SIDE = 112


def make_images(n=12):
    rng = np.random.default_rng(9)
    out = []
    for i in range(n):
        yy, xx = np.mgrid[0:960, 0:1280]
        base = np.stack([(xx * (i + 1) % 256), (yy * 3 % 256), ((xx + yy) // 4 % 256)], -1).astype(np.uint8)
        noise = rng.integers(0, 40, base.shape, dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(base + noise).save(buf, "JPEG", quality=90)
        out.append(buf.getvalue())
    return out


class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.f = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(64, 128, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(128, 10))

    def forward(self, x):
        return self.f(x)


def load_tensor(data):
    img = Image.open(io.BytesIO(data))
    if DECODE == "draft":
        img.draft("RGB", (SIDE * 2, SIDE * 2))
    img = img.convert("RGB").resize((SIDE, SIDE), Image.LANCZOS)
    a = np.asarray(img, dtype=np.float32) / 255.0
    return torch.from_numpy(a.transpose(2, 0, 1).copy())


def main():
    images = make_images()
    model = TinyNet().eval()
    decode_q, batch_q = queue.Queue(), queue.Queue()
    stats = open(os.environ.get("SVC_STATS_PATH", os.devnull), "a", buffering=1)
    lifetime = float(os.environ.get("SVC_LIFETIME", "600"))
    stop = time.time() + lifetime

    def decoder():
        while True:
            item = decode_q.get()
            item["x"] = load_tensor(item["data"])
            batch_q.put(item)

    def inferencer():
        while True:
            items = [batch_q.get()]
            while len(items) < 8:
                try:
                    items.append(batch_q.get_nowait())
                except queue.Empty:
                    break
            with torch.inference_mode():
                p = torch.softmax(model(torch.stack([it["x"] for it in items])), -1)
            for it, row in zip(items, p):
                it["label"] = int(row.argmax())
                it["done"].set()

    def client(i):
        k = i
        while time.time() < stop:
            item = {"data": images[k % len(images)], "t0": time.time(), "done": threading.Event()}
            k += 1
            decode_q.put(item)
            item["done"].wait()
            now = time.time()
            stats.write(f"{now:.4f} {(now - item['t0']) * 1000:.3f} ok\n")

    threading.Thread(target=decoder, daemon=True).start()
    threading.Thread(target=inferencer, daemon=True).start()
    open(os.environ.get("SVC_READY_PATH", os.devnull), "w").close()
    for i in range(CLIENTS):
        threading.Thread(target=client, args=(i,), daemon=True).start()
    time.sleep(lifetime)
    os._exit(0)


if __name__ == "__main__":
    main()
