#!/usr/bin/python3
"""Writes a folder of ImageNet-like JPEGs for bench_decode: crops of the photographs Debian packages
ship (scikit-learn's china.jpg and flower.jpg from python3-sklearn; the wood wallpapers of
gnome-backgrounds), resized to WxH (default 500x375) and saved at quality 90 (Pillow's default 4:2:0).

    /usr/bin/python3 bench/make_decode_photos.py OUT_DIR [--count 200] [--size 500x375] [--photos /usr]

--photos: where to look for the packages' files (/usr when installed; else the DIR of
`apt-get download python3-sklearn gnome-backgrounds && dpkg-deb -x PKG.deb DIR`).
"""
import argparse
import glob
import os
import random
import sys

from PIL import Image


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--size", default="500x375")
    ap.add_argument("--photos", default="/usr")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.split("x"))
    sources = []
    for pat in ("china.jpg", "flower.jpg", "wood-d.webp", "wood-l.webp"):
        hits = sorted(glob.glob(os.path.join(a.photos, "**", pat), recursive=True))
        if hits:
            sources.append(Image.open(hits[0]).convert("RGB"))
    if not sources:
        sys.exit("make_decode_photos.py: no photographs found: install python3-sklearn / gnome-backgrounds, or pass "
                 "--photos DIR with them unpacked")
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    for i in range(a.count):
        src = sources[i % len(sources)]
        sw, sh = src.size
        # A 4:3 box covering 40-100 % of the largest that fits, anywhere in the source.
        bw = min(sw, sh * w // h)
        bw = int(bw * rng.uniform(0.4, 1.0))
        bh = bw * h // w
        x, y = rng.randint(0, sw - bw), rng.randint(0, sh - bh)
        im = src.crop((x, y, x + bw, y + bh)).resize((w, h), Image.LANCZOS)
        im.save(os.path.join(a.out, f"photo_{i:04d}.jpg"), "JPEG", quality=90)
    print(f"make_decode_photos.py: {a.count} {w}x{h} q90 JPEGs in {a.out} from {len(sources)} photographs")


if __name__ == "__main__":
    main()
