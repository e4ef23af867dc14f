"""ember.vision.transforms.batch_plan against torchvision's per-sample Compose on the same uint8
images: the CIFAR-10 training recipe (RandomCrop(32, padding=4), flip, ToTensor, Normalize) on
(N, 32, 32, 3) rows, MNIST's (ToTensor, Normalize) on (N, 28, 28), and ImageNet's training recipe
(RandomResizedCrop(224), flip, ToTensor, Normalize) on 64 random 320 x 256 photos. torchvision's side is what
a Dataset's __getitem__ does per sample (Image.fromarray, the Compose) plus default_collate's stack.
Needs ember and torch/torchvision importable in one Python.
  usage: python bench/vision_transform_plan.py [--batch 256] [--repeats 20]"""

import argparse
import time

import numpy as np
import torch
import torchvision.transforms as TT
from PIL import Image

import ember
from ember.vision import transforms as T


def best_of(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    cases = {
        "cifar10 crop+flip+normalise": (
            rng.integers(0, 256, (5000, 32, 32, 3), dtype=np.uint8),
            lambda M: M.Compose([M.RandomCrop(32, padding=4), M.RandomHorizontalFlip(), M.ToTensor(),
                                 M.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))]), 3, 32, 32),
        "mnist totensor+normalise": (
            rng.integers(0, 256, (5000, 28, 28), dtype=np.uint8),
            lambda M: M.Compose([M.ToTensor(), M.Normalize((0.1307,), (0.3081,))]), 1, 28, 28),
        "photos RandomResizedCrop(224)+flip+normalise": (
            rng.integers(0, 256, (64, 256, 320, 3), dtype=np.uint8),
            lambda M: M.Compose([M.RandomResizedCrop(224), M.RandomHorizontalFlip(), M.ToTensor(),
                                 M.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]), 3, 256, 320),
    }
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"CPU: {cpu}; batch {args.batch}; best of {args.repeats}")
    torch.set_num_threads(1)
    for name, (images, make, c, h, w) in cases.items():
        idx = rng.permutation(len(images))[: min(args.batch, len(images))]
        tv = make(TT)

        def torchvision_batch():
            return torch.stack([tv(Image.fromarray(images[i])) for i in idx])

        plan = T.batch_plan(make(T), c, h, w)
        t_tv = best_of(torchvision_batch, args.repeats)
        n = len(idx)
        line = f"{name}: torchvision per-sample {n / t_tv:,.0f} img/s"
        for threads in (1, 2):
            ember.set_num_threads(threads)
            t_plan = best_of(lambda: plan.run(images, idx, seed=1, epoch=0), args.repeats)
            line += f"; plan {threads} thread(s) {n / t_plan:,.0f} img/s ({t_tv / t_plan:.1f}x)"
        print(line)


if __name__ == "__main__":
    main()
