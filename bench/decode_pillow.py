#!/usr/bin/python3
"""Pillow's side of bench_decode: the same files, read into memory first, decoded on one thread as
torchvision's pil_loader does (Image.open(f).convert("RGB")), and with draft("RGB", (m, m)) first,
Pillow's DCT scaling (what the JPEG decoder gives for a requested size of at least m x m). Rates are
per CPU-second of the decoding thread (time.thread_time) and per wall second.

    /usr/bin/python3 bench/decode_pillow.py DIR [--min-side 224 ...] [--seconds 3]
"""
import argparse
import glob
import io
import os
import time

from PIL import Image


def run(blobs, min_side, seconds):
    n, t0, c0 = 0, time.perf_counter(), time.thread_time()
    size = None
    while True:
        for b in blobs:
            im = Image.open(io.BytesIO(b))
            if min_side:
                im.draft("RGB", (min_side, min_side))
            im = im.convert("RGB")
            size = im.size
            n += 1
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return n / (time.thread_time() - c0), n / dt, size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--min-side", type=int, action="append", default=[])
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(a.dir, "*.jpg")))
    blobs = [open(f, "rb").read() for f in files]
    import PIL
    print(f"pillow {PIL.__version__}: {len(blobs)} files from {a.dir}, one thread")
    for m in [0] + a.min_side:
        cpu_rate, wall_rate, size = run(blobs, m, a.seconds)
        what = "full size" if not m else f"draft >= {m}x{m}"
        print(f"  pillow  {what:<18} {cpu_rate:8.1f} images per CPU-second, {wall_rate:8.1f} images/s wall  "
              f"(output {size[0]}x{size[1]})")


if __name__ == "__main__":
    main()
