#!/usr/bin/python3
# The Python peer of ember's decode timing: open + gunzip + numpy.frombuffer the Fashion-MNIST
# training images and labels (what `ember::data::load_dataset("fashion-mnist")` does), best of 3.
# Run with /usr/bin/python3 (Debian's numpy). Called by bench_loader; also runs on its own.
import gzip
import time

import numpy as np

DIR = "/usr/share/datasets/fashion-mnist/"


def load():
    with gzip.open(DIR + "train-images-idx3-ubyte.gz", "rb") as f:
        images = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(DIR + "train-labels-idx1-ubyte.gz", "rb") as f:
        labels = np.frombuffer(f.read(), dtype=np.uint8, offset=8).astype(np.int64)
    assert images.shape == (60000, 1, 28, 28) and labels.shape == (60000,)
    return images, labels


best = float("inf")
for _ in range(3):
    t0 = time.perf_counter()
    load()
    best = min(best, time.perf_counter() - t0)
print(f"decode  python gzip + numpy.frombuffer, same files:            {best:.3f} s (best of 3)")
