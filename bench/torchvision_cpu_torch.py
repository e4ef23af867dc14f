#!/usr/bin/env python3
"""PyTorch's side of docs/benchmarks.md "torchvision's models on the CPU" (issue 26): training and
inference images/s of torchvision's models on random data, batch 32, as bench/torchvision_cpu.sh
runs ember's `ember bench train [--inference]` beside it.

  usage: OMP_WAIT_POLICY=active PY bench/torchvision_cpu_torch.py [--models resnet18,...]
             [--sizes 224,112] [--precisions fp32,bf16] [--phases train,infer] [--threads 2]
             [--batch 32] [--min-time 1.0] [--repeats 3]

Training is what `ember bench train` times: SGD (momentum 0.9) steps of cross-entropy on one fixed
random batch, the model in train mode; bf16 is torch.autocast("cpu", dtype=torch.bfloat16) around
the forward pass and the loss. Inference: model.eval(), torch.no_grad(), the same autocast. Each
point: two warm-up steps, then `repeats` timings of at least `min-time` seconds (and 2 steps)
each; the median. One JSON line per point on stdout."""
import argparse, json, statistics, time

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet18,resnet50,mobilenet_v2,efficientnet_b0")
    ap.add_argument("--sizes", default="224,112")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--phases", default="train,infer")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    for name in a.models.split(","):
        for size in (int(s) for s in a.sizes.split(",")):
            for phase in a.phases.split(","):
                for prec in a.precisions.split(","):
                    m = getattr(torchvision.models, name)(num_classes=10)
                    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
                    x = torch.randn(a.batch, 3, size, size)
                    y = torch.randint(0, 10, (a.batch,))
                    bf16 = prec == "bf16"
                    if phase == "train":
                        m.train()

                        def step():
                            opt.zero_grad()
                            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                                loss = torch.nn.functional.cross_entropy(m(x), y)
                            loss.backward()
                            opt.step()
                    else:
                        m.eval()

                        def step():
                            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                                m(x).sum().item()
                    step(); step()
                    rates = []
                    for _ in range(a.repeats):
                        n, t0 = 0, time.perf_counter()
                        while True:
                            step(); n += 1
                            dt = time.perf_counter() - t0
                            if n >= 2 and dt >= a.min_time:
                                break
                        rates.append(n * a.batch / dt)
                    print(json.dumps({"framework": f"torch {torch.__version__}", "model": name, "size": size,
                                      "phase": phase, "precision": prec, "batch": a.batch,
                                      "images_per_s": statistics.median(rates),
                                      "spread": (max(rates) - min(rates)) / statistics.median(rates)}), flush=True)


if __name__ == "__main__":
    main()
