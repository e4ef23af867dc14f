#!/usr/bin/env python3
"""Writes augment_v1.bin: torchvision's ColorJitter and TrivialAugmentWide operations on PIL images,
for ember's photo augmentations (src/data/photo_augment.cpp, tests/unit/test_data_photo_augment.cpp).

Run:  VENV/bin/python tests/golden/make_golden_augment.py [OUTDIR]     (default: this folder)
with torchvision >= 0.15 (transforms.v2) and its Pillow; the file in the repository was written by
torchvision 0.29.2 on Pillow 13.0.0. Each operation is the kernel v2 dispatches to for a PIL image
(torchvision.transforms.v2.functional.*), called with the arguments TrivialAugmentWide gives it
(v2/_auto_augment.py, _apply_image_or_video_transform). `--check` instead compares the file against
the interpreter running it (e.g. Debian's /usr/bin/python3: torchvision 0.14's v1 functional ops on
Pillow 9.4) and prints the cases that differ.

The pictures are made from the integer hash of make_golden_torchvision.py, as make_golden_photo.py
makes them (noise<W>x<H>x<C>, ramp<W>x<H>x<C>); outputs are stored as packed bytes with their shape.

Records (EMBGOLD1, see make_golden.py):
    <op>/<input>/<arg>        the picture after the operation, op one of brightness, contrast,
                              saturation, hue, sharpness, posterize, solarize, autocontrast,
                              equalize, shearx, sheary, translatex, translatey, rotate
    ta/<Op>/magnitudes        float64 (31,): TrivialAugmentWide's magnitude table of Op, as float()
                              of its float32 entries
"""
import math, os, struct, sys

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_golden_photo import picture, write_golden  # noqa: E402  (the hashed pictures, the file format)

try:
    import torchvision.transforms.v2.functional as F
    from torchvision.transforms.v2 import TrivialAugmentWide
    SPACE = TrivialAugmentWide._AUGMENTATION_SPACE
except ImportError:  # torchvision 0.14: the v1 functional ops (the same PIL kernels)
    import torchvision.transforms.functional as F
    SPACE = None
from torchvision.transforms import InterpolationMode

NEAREST = InterpolationMode.NEAREST


INPUTS = {
    "noise41x29x3": ("noise", 41, 29, 3),
    "ramp41x29x3": ("ramp", 41, 29, 3),
    "noise29x41x1": ("noise", 29, 41, 1),
    "ramp24x24x3": ("ramp", 24, 24, 3),
    "noise2x2x3": ("noise", 2, 2, 3),
}

# The float32 magnitudes of TrivialAugmentWide's table, as torchvision reads them back.
SHEAR = [float(x) for x in torch.linspace(0.0, 0.99, 31)]
TRANSLATE = [float(x) for x in torch.linspace(0.0, 32.0, 31)]
ROTATE = [float(x) for x in torch.linspace(0.0, 135.0, 31)]
SOLAR = [float(x) for x in torch.linspace(1.0, 0.0, 31)]


def cases():
    """(name, function of a PIL image) for every record but the tables."""
    out = []
    for f in (0.0, 0.3, 0.75, 1.0, 1.55, 1.99):
        out.append((f"brightness/{f!r}", lambda im, f=f: F.adjust_brightness(im, f)))
        out.append((f"contrast/{f!r}", lambda im, f=f: F.adjust_contrast(im, f)))
        out.append((f"saturation/{f!r}", lambda im, f=f: F.adjust_saturation(im, f)))
        out.append((f"sharpness/{f!r}", lambda im, f=f: F.adjust_sharpness(im, f)))
    for m in (SHEAR[7], SHEAR[30]):  # TrivialAugmentWide's 1 + magnitude, both signs
        for f in (1.0 + m, 1.0 - m):
            out.append((f"brightness/{f!r}", lambda im, f=f: F.adjust_brightness(im, f)))
            out.append((f"sharpness/{f!r}", lambda im, f=f: F.adjust_sharpness(im, f)))
    for h in (-0.5, -0.23, -0.01, 0.1, 0.37, 0.5):
        out.append((f"hue/{h!r}", lambda im, h=h: F.adjust_hue(im, h)))
    for b in (1, 2, 4, 6, 8):
        out.append((f"posterize/{b}", lambda im, b=b: F.posterize(im, b)))
    for t in (0.0, 127.5, 128.0, 255.0 * SOLAR[2], 255.0 * SOLAR[7], 255.0):
        out.append((f"solarize/{t!r}", lambda im, t=t: F.solarize(im, t)))
    out.append(("autocontrast/-", F.autocontrast))
    out.append(("equalize/-", F.equalize))
    for i in (1, 9, 17, 30):
        for s in (1, -1):
            m = s * SHEAR[i]
            out.append((f"shearx/{m!r}", lambda im, m=m: F.affine(
                im, angle=0.0, translate=[0, 0], scale=1.0, shear=[math.degrees(math.atan(m)), 0.0],
                interpolation=NEAREST, fill=None, center=[0, 0])))
            out.append((f"sheary/{m!r}", lambda im, m=m: F.affine(
                im, angle=0.0, translate=[0, 0], scale=1.0, shear=[0.0, math.degrees(math.atan(m))],
                interpolation=NEAREST, fill=None, center=[0, 0])))
            t = s * TRANSLATE[i]
            out.append((f"translatex/{t!r}", lambda im, t=t: F.affine(
                im, angle=0.0, translate=[int(t), 0], scale=1.0, shear=[0.0, 0.0], interpolation=NEAREST, fill=None)))
            out.append((f"translatey/{t!r}", lambda im, t=t: F.affine(
                im, angle=0.0, translate=[0, int(t)], scale=1.0, shear=[0.0, 0.0], interpolation=NEAREST, fill=None)))
    for i in (1, 7, 10, 20, 23, 30):
        for s in (1, -1):
            a = s * ROTATE[i]
            out.append((f"rotate/{a!r}", lambda im, a=a: F.rotate(im, a, interpolation=NEAREST, fill=None)))
    return out


def as_array(img):
    a = np.asarray(img, dtype=np.uint8)
    return a[:, :, None] if a.ndim == 2 else a


def main():
    check = "--check" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--check"]
    out = args[0] if args else HERE
    path = os.path.join(out, "augment_v1.bin")
    records = []

    def put(name, array, dtype):
        records.append((name, np.ascontiguousarray(array), dtype))

    for iname, spec in INPUTS.items():
        img = picture(*spec)
        for cname, fn in cases():
            op, arg = cname.split("/", 1)
            a = as_array(fn(img))
            raw = a.tobytes() + b"\0" * (-a.size % 8)
            put(f"{op}/{iname}/{arg}/shape", np.array(a.shape, dtype=np.int64), 2)
            put(f"{op}/{iname}/{arg}/bytes", np.frombuffer(raw, dtype="<i8"), 2)
    if SPACE is not None:
        for op, (fn, _signed) in SPACE.items():
            m = fn(31, 61, 97)
            if m is not None:
                put(f"ta/{op}/magnitudes", np.array([float(x) for x in m], dtype=np.float64), 1)
    if check:
        return compare(path, records)
    write_golden(path, records)


def compare(path, records):
    stored = {}
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack_from("<I", data, 12)[0]
    at = 16
    for _ in range(n):
        ln = struct.unpack_from("<I", data, at)[0]
        name = data[at + 4:at + 4 + ln].decode()
        at += 4 + ln
        dtype, ndim = struct.unpack_from("<II", data, at)
        at += 8
        dims = struct.unpack_from(f"<{ndim}q", data, at)
        at += 8 * ndim
        size = int(np.prod(dims)) * (4 if dtype == 0 else 8)
        stored[name] = data[at:at + size]
        at += size
    differ = 0
    for name, a, dtype in records:
        if name.endswith("/bytes") and stored.get(name) != a.astype("<i8").tobytes():
            mine = np.frombuffer(a.astype("<i8").tobytes(), np.uint8).astype(int)
            theirs = np.frombuffer(stored[name], np.uint8).astype(int)
            print(f"{name}: {np.count_nonzero(mine != theirs)} bytes differ, by up to {np.abs(mine - theirs).max()}")
            differ += 1
    print(f"{differ} of {sum(r[0].endswith('/bytes') for r in records)} pictures differ")


if __name__ == "__main__":
    main()
