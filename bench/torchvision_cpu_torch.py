#!/usr/bin/env python3
"""PyTorch's side of docs/benchmarks.md "torchvision's models on the CPU: a first look": training images/s of
torchvision's resnet18 (fp32, bf16 autocast) and mobilenet_v2 (fp32) at 224x224, batch 32, 2 threads.
   usage: OMP_WAIT_POLICY=active /usr/bin/python3 bench/torchvision_cpu_torch.py"""
import time, torch, torchvision, statistics, sys
torch.set_num_threads(2)
res = {}
for name in ("resnet18", "mobilenet_v2"):
    m = getattr(torchvision.models, name)(num_classes=10)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(32, 3, 224, 224); y = torch.randint(0, 10, (32,))
    for prec in (("fp32", "bf16") if name == "resnet18" else ("fp32",)):
        def step():
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=prec == "bf16"):
                loss = torch.nn.functional.cross_entropy(m(x), y)
            loss.backward(); opt.step()
        step(); step()
        ts = []
        for r in range(3):
            t = time.perf_counter(); step(); step(); ts.append(64 / (time.perf_counter() - t))
        print(f"torch {torch.__version__} {name} {prec} train 224 batch 32: {statistics.median(ts):.1f} img/s", flush=True)
