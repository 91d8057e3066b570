"""Audio event tagging service."""
import base64
import os

import numpy as np
from flask import Flask, jsonify, request

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

SR = 16000
N_FFT = 512
HOP = 2
N_MELS = 64
REUSE = os.environ.get("SVC_WORKSPACE", "fresh") == "reuse"


def mel_filters():
    rng = np.random.default_rng(0)
    return np.abs(rng.standard_normal((N_FFT // 2 + 1, N_MELS))).astype(np.float32) / N_FFT


class Tagger:
    def __init__(self):
        rng = np.random.default_rng(1)
        self.mel = mel_filters()
        self.window = np.hanning(N_FFT).astype(np.float32)
        self.w = rng.standard_normal((N_MELS, 16)).astype(np.float32)
        self.ws = {}

    def frames(self, audio):
        n = 1 + (len(audio) - N_FFT) // HOP
        shape = (n, N_FFT)
        if REUSE:
            buf = self.ws.get(shape)
            if buf is None:
                buf = self.ws[shape] = np.empty(shape, dtype=np.float32)
        else:
            buf = np.empty(shape, dtype=np.float32)
        view = np.lib.stride_tricks.as_strided(audio, shape=shape, strides=(audio.strides[0] * HOP, audio.strides[0]))
        np.copyto(buf, view)
        return buf

    def predict(self, audio):
        fr = self.frames(audio)
        energy = np.abs(fr[:, ::N_FFT // 4]).sum(axis=1)
        top = np.argsort(energy)[-64:]
        spec = np.abs(np.fft.rfft(fr[top] * self.window, axis=1)).astype(np.float32)
        logmel = np.log1p(spec @ self.mel)
        logits = logmel.mean(axis=0) @ self.w
        return int(np.argmax(logits)), float(energy.mean())


tagger = Tagger()
app = Flask(__name__)


@app.get("/health")
def health():
    return "ok"


@app.post("/tag")
def predict():
    body = request.get_json()
    pcm = np.frombuffer(base64.b64decode(body["pcm16"]), dtype=np.int16).astype(np.float32) / 32768.0
    label, energy = tagger.predict(pcm)
    return jsonify({"label": label, "energy": energy})
