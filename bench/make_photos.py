#!/usr/bin/python3
"""A folder of ImageNet-like photographs for `ember bench data` and the photo pipeline's figures
(docs/benchmarks.md): N JPEGs of about 500x375 at quality 90 in 10 class folders, cut from the
real photographs Debian packages ship (scikit-image's sample images, scikit-learn's china.jpg and
flower.jpg), each a random window of a random source, scaled, maybe mirrored, re-encoded.

  usage: bench/make_photos.sh OUT [N=2000]      (fetches the packages' .debs and runs this)
         /usr/bin/python3 bench/make_photos.py OUT N SOURCE_FILE...
Needs python3-pil. Seeded: the same folder every time for the same sources."""
import os, random, sys

from PIL import Image


def main():
    out, n, sources = sys.argv[1], int(sys.argv[2]), sorted(sys.argv[3:])
    if not sources:
        sys.exit("make_photos.py: no source photographs given")
    pics = []
    for s in sources:
        try:
            im = Image.open(s).convert("RGB")
        except OSError as e:  # a sample image shipped damaged on purpose, or not a picture
            print(f"make_photos.py: skipped {s}: {e}", file=sys.stderr)
            continue
        if min(im.size) >= 300:
            pics.append(im)
    if not pics:
        sys.exit("make_photos.py: no source photograph of at least 300 pixels a side")
    rng = random.Random(0)
    for c in range(10):
        os.makedirs(os.path.join(out, f"class{c}"), exist_ok=True)
    for i in range(n):
        src = pics[i % len(pics)]
        w, h = rng.choice([(500, 375), (375, 500), (500, 333), (500, 400), (450, 450)])
        # A window of 45-100% of what fits at the output's aspect ratio, resized to (w, h).
        fit = min(src.width / w, src.height / h)
        s = fit * rng.uniform(0.45, 1.0)
        cw, ch = max(1, int(w * s)), max(1, int(h * s))
        x, y = rng.randint(0, src.width - cw), rng.randint(0, src.height - ch)
        im = src.crop((x, y, x + cw, y + ch)).resize((w, h), Image.BILINEAR)
        if rng.random() < 0.5:
            im = im.transpose(Image.FLIP_LEFT_RIGHT)
        im.save(os.path.join(out, f"class{i % 10}", f"{i:05d}.jpg"), quality=90)
    print(f"{out}: {n} photos from {len(pics)} sources")


if __name__ == "__main__":
    main()
