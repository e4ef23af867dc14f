"""ember / PyTorch ratios for scripts/gpu-check.sh's final table, from the JSON both sides wrote into
the check's output folder (same machine, same card):
  matmul_fp32_N, matmul_tf32_N   ember bench matmul cuda0_gflops / torch matmul gflops   target >= 0.9
  pinned_h2d, pinned_d2h         ember bench bandwidth pinned GB/s / torch pinned copy_  target >= 0.9
  mnistnet_train_b128            ember bench train samples/s / torch eager samples/s     target > 1.0
Prints one line per ratio, "NAME<TAB>STATUS" (STATUS: "PASS (0.95, target >= 0.9)", "FAIL (...)" or
"SKIP (why)"), and writes OUTDIR/ratios.json. Only the Python standard library.
  usage: python3 bench/gpu_ratios.py OUTDIR"""
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"_error": f"{os.path.basename(path)}: {e}"}


def ratio_rows(outdir):
    ember_mm = {"float32": load(os.path.join(outdir, "bench_matmul.json")),
                "tf32": load(os.path.join(outdir, "bench_matmul_tf32.json"))}
    ember_bw = load(os.path.join(outdir, "bench_bandwidth.json"))
    ember_tr = load(os.path.join(outdir, "bench_train_mnistnet128.json"))
    torch_side = load(os.path.join(outdir, "torch_side.json"))
    rows = []

    def add(name, ember, torch_value, target, strict):
        if ember is None or torch_value is None or torch_value <= 0:
            rows.append({"name": name, "status": "SKIP (missing ember or PyTorch figure)", "ember": ember,
                         "torch": torch_value})
            return
        r = ember / torch_value
        ok = r > target if strict else r >= target
        rows.append({"name": name, "ember": ember, "torch": torch_value, "ratio": r, "target": target,
                     "status": "{} ({:.2f}, target {} {})".format("PASS" if ok else "FAIL", r, ">" if strict else ">=",
                                                                  target)})

    if "_error" in torch_side:
        return [{"name": "torch_ratios", "status": "SKIP (no PyTorch figures: {})".format(torch_side["_error"])}]
    for dtype, ember in ember_mm.items():
        ours = {row["n"]: row.get("cuda0_gflops") for row in ember.get("results", [])}
        for t in torch_side.get("matmul", []):
            if t["dtype"] == dtype and t["n"] in ours:
                add("matmul_{}_{}".format("fp32" if dtype == "float32" else dtype, t["n"]), ours[t["n"]], t["gflops"],
                    0.9, False)
    bw = torch_side.get("bandwidth") or {}
    ours = next((r for r in ember_bw.get("results", []) if r.get("device") == 0), {})
    for k in ("h2d_pinned", "d2h_pinned"):
        add("pinned_" + k.split("_")[0], ours.get(k), bw.get(k), 0.9, False)
    for t in torch_side.get("train", []):
        mine = next((r.get("samples_per_s") for r in ember_tr.get("results", [])
                     if r.get("model") == t["model"] and r.get("batch_size") == t["batch_size"]
                     and r.get("device", "").startswith("cuda")), None)
        add("{}_train_b{}".format(t["model"], t["batch_size"]), mine, t["samples_per_s"], 1.0, True)
    return rows


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    rows = ratio_rows(argv[0])
    with open(os.path.join(argv[0], "ratios.json"), "w") as f:
        json.dump(rows, f, indent=2)
    for r in rows:
        print("{}\t{}".format(r["name"], r["status"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
