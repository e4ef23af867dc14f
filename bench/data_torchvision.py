#!/usr/bin/env python3
"""torchvision's side of `ember bench data` (docs/benchmarks.md, issue 27): the DataLoader users
write for ImageNet-style training on the same photo folder, and Pillow's decode on one core.

  usage: PY bench/data_torchvision.py FOLDER [--workers 2] [--batch 32] [--size 224] [--epochs 2]
                                             [--augment standard|trivial] [--color-jitter B,C,S,H]
(trivial: TrivialAugmentWide after the flip; --color-jitter: ColorJitter after the flip, before it,
as `ember bench data` orders them.)
PY: a Python with torch and torchvision >= 0.16 (transforms.v2). Prints one JSON object."""
import argparse, json, statistics, time

import torch
from PIL import Image
from torchvision import datasets
from torchvision.transforms import v2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--augment", choices=["standard", "trivial"], default="standard")
    ap.add_argument("--color-jitter", default="")
    a = ap.parse_args()
    torch.set_num_threads(1)
    steps = [v2.RandomResizedCrop(a.size), v2.RandomHorizontalFlip()]
    if a.color_jitter:
        j = [float(x) for x in a.color_jitter.split(",")]
        j = j * 3 if len(j) == 1 else j
        steps.append(v2.ColorJitter(*j))
    if a.augment == "trivial":
        steps.append(v2.TrivialAugmentWide())
    tf = v2.Compose(steps + [v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
                             v2.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
    ds = datasets.ImageFolder(a.folder, transform=tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers, pin_memory=True,
                                     persistent_workers=a.workers > 0)
    rates = []
    for _ in range(a.epochs):
        t0, n = time.perf_counter(), 0
        for x, y in dl:
            n += x.shape[0]
        rates.append(n / (time.perf_counter() - t0))
    files = [p for p, _ in ds.samples[:200]]
    t0 = time.perf_counter()
    for p in files:
        Image.open(p).convert("RGB")
    decode = len(files) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for p in files:
        tf(Image.open(p).convert("RGB"))
    sample = len(files) / (time.perf_counter() - t0)
    import torchvision
    print(json.dumps({"framework": f"torch {torch.__version__} torchvision {torchvision.__version__}",
                      "images": len(ds), "workers": a.workers, "batch": a.batch,
                      "loader_images_per_s": statistics.median(rates), "loader_epochs_images_per_s": rates,
                      "decode_images_per_s_one_core": decode, "decode_augment_images_per_s_one_core": sample}))


if __name__ == "__main__":
    main()
