"""Text features: hashed character trigram counts."""

BUCKETS = 1024


def fnv1a(s):
    h = 2166136261
    for ch in s:
        h ^= ord(ch)
        h = (h * 16777619) & 0xFFFFFFFF
    return h


def featurize(text):
    counts = [0] * BUCKETS
    for word in text.lower().split():
        w = f"^{word}$"
        for i in range(len(w) - 2):
            counts[fnv1a(w[i:i + 3]) % BUCKETS] += 1
    return counts
