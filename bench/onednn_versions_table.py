#!/usr/bin/env python3
"""Tables for bench/onednn_versions.sh: per row (op, shape, type) the median over rounds of each
run's median microseconds, per oneDNN variant, and the ratio to 2.6 (below 1: 3.x is faster; in
parentheses the same ratio from the best samples). Then sums over the primitives one training
step (or one inference batch) of a model runs through oneDNN in ember.
  onednn_versions_table.py [--compact] OUTDIR VARIANT...   (files OUTDIR/<isa>.<variant>.<round>.tsv)
--compact: one line per layer, type and primitive family, a cell per pass: 2.6's microseconds and
each 3.x's ratio to it."""
import glob
import os
import statistics
import sys


def load(outdir, isa, variant):
    rows, version = {}, "?"
    for path in sorted(glob.glob(os.path.join(outdir, f"{isa}.{variant}.*.tsv"))):
        for line in open(path):
            f = line.rstrip("\n").split("\t")
            if f[0] == "version":
                version = f[1]
            elif f[0] == "row":
                r = rows.setdefault((f[1], f[2], f[3]), {"med": [], "best": [], "impl": f[6]})
                r["med"].append(float(f[4]))
                r["best"].append(float(f[5]))
    return version, {k: (statistics.median(v["med"]), min(v["best"]), v["impl"], len(v["med"])) for k, v in rows.items()}


# What ember runs through oneDNN per step (src/cpu/nn_conv_dnnl.cpp, linear_dnnl.cpp,
# linear_matmul.cpp): the first layer's input gradient is not computed; f32 linear training runs
# its weight gradient as the inner product and, for layers of at least 2^19 multiply-adds
# (kMinDnnlLinearWork), its forward as a matmul and its input gradient as oneDNN's sgemm (not a
# primitive: not timed here); the smaller layers' forward and input gradient run on OpenBLAS.
def conv_ops(shape, first):
    ops = ["conv_fwd", "conv_bwd_weights", "reorder_x_in", "reorder_y_out", "reorder_gy_in"]
    if not first:
        ops += ["conv_bwd_data", "reorder_gx_out"]
    return [(op, shape) for op in ops]


def linear_train(shape, first, bf16):
    if not bf16:
        n, io = shape.split()[-1].split("x")
        big = int(n) * int(io.split("->")[0]) * int(io.split("->")[1]) >= 1 << 19
        return [("ip_bwd_weights", shape)] + ([("matmul_fwd", shape)] if big else [])
    ops = ["matmul_fwd", "matmul_bwd_weights"] + ([] if first else ["matmul_bwd_data"])
    return [(op, shape) for op in ops]


def model_sets(bf16):
    m1, m2 = "mnistnet.conv1 64x1x28x28 k3 ->32", "mnistnet.conv2 64x32x26x26 k3 ->64"
    l1, l2 = "lenet5.conv1 64x1x28x28 k5 ->6", "lenet5.conv2 64x6x14x14 k5 ->16"
    return {
        "mnistnet train step (2 convs + fc1), batch 64":
            conv_ops(m1, True) + conv_ops(m2, False) + linear_train("mnistnet.fc1 64x9216->128", False, bf16),
        "lenet5 train step (2 convs), batch 64": conv_ops(l1, True) + conv_ops(l2, False),
        "mlp train step (fc1 + fc2), batch 64":
            linear_train("mlp.fc1 64x784->256", True, bf16) + linear_train("mlp.fc2 64x256->10", False, bf16),
        "mlp inference (fc1 + fc2), batch 256":
            [("ip_fwd_inference", "mlp.fc1 256x784->256"), ("ip_fwd_inference", "mlp.fc2 256x256->10")],
    }


FAMILIES = {
    "conv": ("conv_fwd", "conv_bwd_data", "conv_bwd_weights"),
    "inner product": ("ip_fwd_inference", "ip_bwd_data", "ip_bwd_weights"),
    "matmul": ("matmul_fwd", "matmul_bwd_data", "matmul_bwd_weights"),
}
REORDERS = ("reorder_x_in", "reorder_gy_in", "reorder_y_out", "reorder_gx_out")


def compact(outdir, variants):
    for isa in ("native", "AVX512_CORE_BF16"):
        data = {v: load(outdir, isa, v) for v in variants}
        if not data[variants[0]][1]:
            continue
        vers = [data[v][0] for v in variants]
        print(f"\n{'as detected' if isa == 'native' else 'capped to ' + isa}: cells are {vers[0]} µs, then "
              + ", ".join(f"{x}/{vers[0]}" for x in vers[1:]) + "\n")
        print("| layer | type | primitive | forward | backward-data | backward-weights | reorders (4, summed) |")
        print("|---|---|---|---|---|---|---|")
        shapes = list(dict.fromkeys((k[1], k[2]) for k in data[variants[0]][1]))
        for shape, t in shapes:
            for fam, ops in FAMILIES.items():
                rows = [data[v][1] for v in variants]
                if (ops[0], shape, t) not in rows[0]:
                    continue
                cells = []
                for group in [(op,) for op in ops] + ([REORDERS] if fam == "conv" else []):
                    vals = [sum(r[(op, shape, t)][0] for op in group) for r in rows]
                    cells.append(f"{vals[0]:.0f}: " + " / ".join(f"{x / vals[0]:.2f}" for x in vals[1:]))
                if fam != "conv":
                    cells.append("")
                print(f"| {shape} | {t} | {fam} | " + " | ".join(cells) + " |")


def main():
    if sys.argv[1] == "--compact":
        return compact(sys.argv[2], sys.argv[3:])
    outdir, variants = sys.argv[1], sys.argv[2:]
    names = {"v2": "2.6", "v3_gomp": "3.x gomp", "v3_sycl": "3.x sycl"}
    for isa in ("native", "AVX512_CORE_BF16"):
        data = {v: load(outdir, isa, v) for v in variants}
        if not data or not data[variants[0]][1]:
            continue
        heads = [f"{data[v][0]} ({names.get(v, v)})" for v in variants]
        rounds = max(n for _, _, _, n in data[variants[0]][1].values())
        print(f"\n### ISA: {'as detected' if isa == 'native' else 'capped to ' + isa} ({rounds} rounds)\n")
        print("| op | shape | type | " + " | ".join(f"{h} µs" for h in heads) + " | " +
              " | ".join(f"{data[v][0]}/{data[variants[0]][0]}" for v in variants[1:]) + " | implementations |")
        print("|" + "---|" * (4 + 2 * len(variants)))
        base = data[variants[0]][1]
        for key in base:
            cells = [data[v][1].get(key) for v in variants]
            if any(c is None for c in cells):
                continue
            ratios = [f"{c[0] / cells[0][0]:.2f} ({c[1] / cells[0][1]:.2f})" for c in cells[1:]]
            impls = " / ".join(dict.fromkeys(c[2] for c in cells))
            print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(f"{c[0]:.1f}" for c in cells) + " | " +
                  " | ".join(ratios) + f" | {impls} |")
        print("\nSums over what ember runs through oneDNN (µs; ratio to 2.6):\n")
        print("| model | type | " + " | ".join(heads) + " |")
        print("|" + "---|" * (2 + len(variants)))
        for bf16 in (False, True):
            t = "bf16" if bf16 else "f32"
            for model, ops in model_sets(bf16).items():
                sums = []
                for v in variants:
                    rows = data[v][1]
                    vals = [rows.get((op, shape, t)) for op, shape in ops]
                    sums.append(None if any(x is None for x in vals) else sum(x[0] for x in vals))
                if sums[0] is None:
                    continue
                cells = ["n/a" if s is None else f"{s:.0f}" if i == 0 else f"{s:.0f} ({s / sums[0]:.2f})"
                         for i, s in enumerate(sums)]
                print(f"| {model} | {t} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
