#!/usr/bin/python3
"""Writes photo_v1.bin: torchvision's transforms on PIL images, for ember's photo transforms
(src/data/photo_transforms.cpp, tests/unit/test_data_photo_transforms.cpp).

Run:  /usr/bin/python3 tests/golden/make_golden_photo.py [OUTDIR]     (default: this folder)
Needs Debian's python3-torch, python3-torchvision (0.14) and python3-pil (9.4): the transforms on PIL
images are Pillow's (Resize is Image.resize(..., BILINEAR), antialiased), the float steps torch's.

No pictures are stored as inputs: each is made from the integer hash of make_golden_torchvision.py
(tests/golden/hash_fill.h is its C++ twin):
    noise<W>x<H>x<C>: byte i (interleaved rows) = splitmix64(fnv1a64("photo/noise") XOR i) >> 56
    ramp<W>x<H>x<C>:  byte (y, x, c) = (5 x + 3 y + 60 c + (hash byte >> 5)) mod 256
Outputs are stored as their bytes packed 8 to an int64 (little-endian, zero-padded) in
"<case>/bytes", with "<case>/shape" = (H, W, C).

Records (EMBGOLD1, see make_golden.py):
    resize/<input>/<H>x<W>            Resize((H, W)), antialias
    short/<input>/<S>                 Resize(S) (the shorter side to S)
    rcrop/<input>/<t>_<l>_<h>_<w>/<S> resized_crop(top t, left l, h, w, (S, S))
    ccrop/<input>/<H>x<W>             CenterCrop((H, W)) (larger than the input: zero padding)
    eval/ramp160x120x3/<S>                 Resize(int(S * 256 / 224)) + CenterCrop(S)
    hflip/<input>                     RandomHorizontalFlip(p=1)
    planes/<input>                    float32 (noise inputs) (C, H, W): ToTensor + Normalize(ImageNet mean/std)
    rrc/<H>x<W>/stats                 float64 (4, 2): over 10,000 draws of RandomResizedCrop.get_params
                                      (scale (0.08, 1), ratio (3/4, 4/3)), the mean and standard
                                      deviation of top, left, height, width
    rrc/<H>x<W>/fallback              float64: the share of draws that took the centre fallback
    predict/resnet18/<S>              float64 (10,): torchvision's resnet18 (10 classes, the hashed weights
                                      of make_golden_torchvision.py, eval mode, float32) on the picture
                                      ramp320x240x3 through its weights' evaluation transforms at crop S
                                      (Resize(S * 256 / 224) + CenterCrop(S) + ToTensor + Normalize):
                                      the softmax probabilities, what `ember predict --weights` prints
"""
import os, struct, sys

import numpy as np
import torch
import torchvision.transforms.functional as F
from torchvision import transforms as T
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_golden_torchvision import hash_bits, hashed_state  # noqa: E402  (the shared integer hash)


def hash_bytes(name, n):
    return (hash_bits(name, n) >> np.uint64(56)).astype(np.uint8)


def picture(kind, w, h, c):
    noise = hash_bytes("photo/" + kind, w * h * c).reshape(h, w, c)
    if kind == "ramp":
        y, x, ch = np.meshgrid(np.arange(h), np.arange(w), np.arange(c), indexing="ij")
        noise = ((5 * x + 3 * y + 60 * ch + (noise >> 5)) % 256).astype(np.uint8)
    return Image.fromarray(noise[:, :, 0] if c == 1 else noise, "L" if c == 1 else "RGB")


records = []


def put(name, array, dtype):
    records.append((name, np.ascontiguousarray(array), dtype))


def put_image(name, img):
    a = np.asarray(img, dtype=np.uint8)
    if a.ndim == 2:
        a = a[:, :, None]
    raw = a.tobytes() + b"\0" * (-a.size % 8)
    put(name + "/shape", np.array(a.shape, dtype=np.int64), 2)
    put(name + "/bytes", np.frombuffer(raw, dtype="<i8"), 2)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    torch.set_num_threads(1)
    inputs = {
        "noise97x61x3": picture("noise", 97, 61, 3),
        "ramp97x61x3": picture("ramp", 97, 61, 3),
        "noise61x97x1": picture("noise", 61, 97, 1),
    }
    for name, img in inputs.items():
        for h, w in ((40, 50), (100, 130), (61, 30), (7, 97), (1, 1), (61, 97)):
            put_image(f"resize/{name}/{h}x{w}", F.resize(img, [h, w], T.InterpolationMode.BILINEAR))
        for s in (32, 100):
            put_image(f"short/{name}/{s}", F.resize(img, s, T.InterpolationMode.BILINEAR))
        for t, l, h, w, s in ((5, 7, 30, 41, 24), (0, 0, 61, 61, 50), (10, 3, 20, 9, 33)):
            if t + h <= img.height and l + w <= img.width:
                put_image(f"rcrop/{name}/{t}_{l}_{h}_{w}/{s}",
                          F.resized_crop(img, t, l, h, w, [s, s], T.InterpolationMode.BILINEAR))
        for h, w in ((40, 40), (41, 20), (60, 96), (70, 110), (8, 200)):
            put_image(f"ccrop/{name}/{h}x{w}", F.center_crop(img, [h, w]))
        put_image(f"hflip/{name}", F.hflip(img))
        planes = F.normalize(F.to_tensor(img.convert("RGB")), [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        if name == "noise97x61x3":
            put(f"planes/{name}", planes.numpy().astype(np.float32), 0)
    img = picture("ramp", 160, 120, 3)
    for s in (112, 64):
        put_image(f"eval/ramp160x120x3/{s}", F.center_crop(F.resize(img, int(s * 256 / 224), T.InterpolationMode.BILINEAR), s))
    import torchvision
    model = torchvision.models.resnet18(num_classes=10)
    model.load_state_dict(hashed_state(model))
    model.eval()
    photo = picture("ramp", 320, 240, 3)
    for s in (224, 160):
        x = F.center_crop(F.resize(photo, int(s * 256 / 224), T.InterpolationMode.BILINEAR), s)
        x = F.normalize(F.to_tensor(x), [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        with torch.no_grad():
            probs = torch.softmax(model(x[None]), 1)[0]
        put(f"predict/resnet18/{s}", probs.double().numpy(), 1)
    torch.manual_seed(0)
    for h, w in ((375, 500), (100, 20)):
        img = torch.zeros(1, h, w)
        boxes = np.array([T.RandomResizedCrop.get_params(img, [0.08, 1.0], [3 / 4, 4 / 3]) for _ in range(10000)],
                         dtype=np.float64)
        put(f"rrc/{h}x{w}/stats", np.stack([boxes.mean(0), boxes.std(0)], 1), 1)
        fallback = np.mean((boxes[:, 2] == min(h, round(w * 4 / 3)) if w / h < 3 / 4 else boxes[:, 2] == h) &
                           (boxes[:, 0] == (h - boxes[:, 2]) // 2) & (boxes[:, 1] == (w - boxes[:, 3]) // 2))
        put(f"rrc/{h}x{w}/fallback", np.array([fallback], dtype=np.float64), 1)
    write_golden(os.path.join(out, "photo_v1.bin"), records)


def write_golden(path, records):
    """records: (name, array, dtype 0 f32 / 1 f64 / 2 i64) in the EMBGOLD1 format (make_golden.py)."""
    with open(path, "wb") as f:
        f.write(b"EMBGOLD1" + struct.pack("<II", 1, len(records)))
        for name, a, dtype in records:
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)) + nb + struct.pack("<II", dtype, a.ndim))
            f.write(struct.pack(f"<{a.ndim}q", *a.shape))
            f.write(a.astype({0: "<f4", 1: "<f8", 2: "<i8"}[dtype]).tobytes())
    print(f"{path}: {len(records)} records, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
