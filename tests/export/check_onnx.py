"""ember's ONNX and safetensors exports seen by the Python tools people use: onnx.checker
(full check, with shape inference) accepts every exported graph, onnxruntime gives ember's logits
for every zoo model and for specs with every layer kind, and, for a trained lenet5, the test set's
logits and ember's accuracy; Python's safetensors reads the state-dict export with its metadata.

usage: check_onnx.py EMBER EXPORT_FIXTURE WORK_DIR     (run by run_export_test.sh in a venv)"""

import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from safetensors import safe_open

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import compare, read_safetensors, run, trained_run  # noqa: E402

REQUIRED_METADATA = {"ember_version", "model", "dataset", "input_shape", "mean", "std", "classes"}


def check_graph(path):
    """The checker's full check, opset 17, ember's metadata; returns an onnxruntime session."""
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    assert [(o.domain, o.version) for o in m.opset_import] == [("", 17)], m.opset_import
    meta = {p.key: p.value for p in m.metadata_props}
    missing = REQUIRED_METADATA - meta.keys()
    assert not missing, f"{path}: metadata_props lacks {sorted(missing)}"
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"]), meta


def check_state_dict_file(path, model):
    with safe_open(path, "np") as f:
        keys, meta = list(f.keys()), f.metadata()
    assert keys and not any(k.startswith(("model/", "optim/", "sched/")) for k in keys), keys[:5]
    assert meta.get("format") == "pt" and meta.get("model") == model, meta
    assert not REQUIRED_METADATA - meta.keys(), f"{path}: __metadata__ lacks {sorted(REQUIRED_METADATA - meta.keys())}"
    return len(keys)


def main():
    ember, fixture, work = sys.argv[1:4]
    zoo = os.path.join(work, "zoo")
    print(run([fixture, "zoo", zoo]), end="")
    cases = json.load(open(os.path.join(zoo, "cases.json")))
    for c in cases:
        base = os.path.join(zoo, c["name"])
        sess, meta = check_graph(base + ".onnx")
        assert json.loads(meta["input_shape"]) == [c["channels"], c["size"], c["size"]], meta
        io, _ = read_safetensors(base + ".io.safetensors")
        got = sess.run(["logits"], {"input": io["input"]})[0]
        worst = compare(c["name"], got, io["logits"])
        one = sess.run(["logits"], {"input": io["input"][:1]})[0]  # the batch dim is symbolic
        compare(c["name"] + " (batch 1)", one, io["logits"][:1])
        n = check_state_dict_file(base + ".safetensors", c["model"])
        print(f"PASS {c['name']}: checker ok, onnxruntime logits within 1e-4 of ember's (largest difference "
              f"{worst:.2e}), safetensors {n} tensors")

    r = trained_run(ember, fixture, os.path.join(work, "run"))
    sess, meta = check_graph(r["onnx"])
    logits = np.concatenate([sess.run(["logits"], {"input": r["input"][i:i + 1000]})[0]
                             for i in range(0, len(r["input"]), 1000)])
    worst = compare("trained lenet5", logits, r["ember_logits"])
    accuracy = float((logits.argmax(1) == r["labels"]).mean())
    if abs(accuracy - r["accuracy"]) > 1e-9:
        sys.exit(f"FAIL: onnxruntime accuracy {accuracy} but `ember eval --json` says {r['accuracy']}")
    check_state_dict_file(r["safetensors"], "lenet5")
    print(f"PASS trained lenet5 on {r['what']}: onnxruntime accuracy {accuracy:.4f} == ember eval's "
          f"{r['accuracy']:.4f}; logits within 1e-4 (largest difference {worst:.2e}); "
          f"onnx {onnx.__version__}, onnxruntime {ort.__version__}")


if __name__ == "__main__":
    main()
