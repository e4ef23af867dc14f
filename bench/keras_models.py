"""Keras 3 (TensorFlow backend) twin of bench/torch_models.py and bench/bench_models.cpp: the same
models (mlp = Flatten, Dense 784->256, ReLU, Dense 256->10; lenet5 and mnistnet as in
tests/golden/make_golden.py, channels-last as Keras builds them), the same measurements.
  train: model.fit on one fixed random batch repeated (SGD lr 0.01, momentum 0.9, sparse cross-entropy
         from logits), batch 64, one warm-up fit of the same length excluded (it traces and compiles
         the step), median over repetitions of `steps` steps. compile() keeps its default
         jit_compile="auto", what a user gets.
  infer: model.predict on one fixed batch repeated, batch 256, one warm-up call, median over
         repetitions.
  --mixed-bf16: keras.mixed_precision.set_global_policy("mixed_bfloat16") before the model is
         built (the logits layer stays float32, as the Keras mixed-precision guide says).

    /work/venvs/keras/bin/python bench/keras_models.py --threads 2 [--json] [--reps 3] [--mixed-bf16]
(`/usr/bin/python3 -m venv /work/venvs/keras && /work/venvs/keras/bin/pip install tensorflow-cpu`)
"""
import argparse
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers  # noqa: E402

TRAIN_STEPS = {"mlp": 200, "lenet5": 100, "mnistnet": 8, "bncnn48_fc128": 200}
INFER_STEPS = {"mlp": 100, "lenet5": 50, "mnistnet": 4, "bncnn48_fc128": 100}


def logits(x):
    # The mixed-precision guide: compute the last layer's output in float32.
    return layers.Activation("linear", dtype="float32")(x)


def mlp():
    x = inp = keras.Input((28, 28, 1))
    x = layers.Flatten()(x)
    x = layers.Dense(256, activation="relu")(x)
    return keras.Model(inp, logits(layers.Dense(10)(x)))


def lenet5():
    x = inp = keras.Input((28, 28, 1))
    x = layers.Conv2D(6, 5, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Conv2D(16, 5, activation="relu")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(120, activation="relu")(x)
    x = layers.Dense(84, activation="relu")(x)
    return keras.Model(inp, logits(layers.Dense(10)(x)))


def mnistnet():
    x = inp = keras.Input((28, 28, 1))
    x = layers.Conv2D(32, 3, activation="relu")(x)
    x = layers.Conv2D(64, 3, activation="relu")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Dropout(0.25)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(128, activation="relu")(x)
    x = layers.Dropout(0.5)(x)
    return keras.Model(inp, logits(layers.Dense(10)(x)))


def bncnn48_fc128():
    # ember's bncnn48_fc128: conv (no bias) + batch norm + ReLU + 2x2 max pool, 1 -> 16 -> 48
    # channels, then 128 -> 10.
    x = inp = keras.Input((28, 28, 1))
    for ch in (16, 48):
        x = layers.Conv2D(ch, 3, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
        x = layers.MaxPooling2D(2)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(128, activation="relu")(x)
    return keras.Model(inp, logits(layers.Dense(10)(x)))


MODELS = {"mlp": mlp, "lenet5": lenet5, "mnistnet": mnistnet, "bncnn48_fc128": bncnn48_fc128}


def build(name):
    keras.utils.set_random_seed(1234)
    model = MODELS[name]()
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01, momentum=0.9),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def batch_dataset(batch, with_labels):
    rng = np.random.default_rng(1234)
    x = rng.standard_normal((batch, 28, 28, 1), dtype=np.float32)
    if not with_labels:
        return tf.data.Dataset.from_tensors(x).repeat()
    y = rng.integers(0, 10, (batch,), dtype=np.int64)
    return tf.data.Dataset.from_tensors((x, y)).repeat()


def timed(fn, batch, steps, reps):
    fn()  # warm-up: traces and compiles
    sps = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sps.append(batch * steps / (time.perf_counter() - t0))
    return statistics.median(sps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--models", default="mlp,lenet5,mnistnet")
    ap.add_argument("--mixed-bf16", action="store_true")
    args = ap.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    if args.mixed_bf16:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")

    results = {}
    for m in args.models.split(","):
        model = build(m)
        train_ds = batch_dataset(64, True)
        steps = TRAIN_STEPS[m]
        train = timed(lambda: model.fit(train_ds, steps_per_epoch=steps, epochs=1, verbose=0,
                                        shuffle=False),
                      64, steps, args.reps)
        infer_ds = batch_dataset(256, False)
        isteps = INFER_STEPS[m]
        infer = timed(lambda: model.predict(infer_ds, steps=isteps, verbose=0), 256, isteps,
                      args.reps)
        results[m] = {"train_samples_per_s": train, "infer_samples_per_s": infer}
        if not args.json:
            print(f"{m:10s} train {train:9.1f} samples/s   infer {infer:9.1f} samples/s")
    if args.json:
        print(json.dumps({"framework": "keras", "version": f"keras {keras.__version__} / tf {tf.__version__}",
                          "precision": "bf16" if args.mixed_bf16 else "fp32",
                          "threads": args.threads, "reps": args.reps, "models": results}))


if __name__ == "__main__":
    main()
