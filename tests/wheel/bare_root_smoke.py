"""What a user does first after `pip install ember-*.whl` on a bare machine (run by
scripts/test-wheel-bare-root.sh inside a minimal Debian root: no compiler, no -dev package): import
ember from outside any checkout, train a small ember.nn model with ember.optim on random data and see
the loss fall, run ember.fit on a tiny synthetic IDX dataset, and run ember.doctor()."""
import os
import struct
import sys
import tempfile

import ember
from ember import nn

print("ember", ember.__version__, "from", os.path.dirname(ember.__file__))
assert "site-packages" in ember.__file__, f"ember was not imported from the installed wheel: {ember.__file__}"

# 1. A small MLP on random data that has a rule to learn (the class is the sign of the first feature).
ember.manual_seed(0)
x = ember.randn(256, 16)
y = (x[:, 0] > 0).long()
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
opt = ember.optim.Adam(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
losses = []
for step in range(30):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    losses.append(float(loss.item()))
print(f"nn + optim: loss {losses[0]:.4f} -> {losses[-1]:.4f}")
assert losses[-1] < 0.5 * losses[0], f"the loss did not fall: {losses}"

# 2. ember.fit on 256 + 64 synthetic 28x28 images in Fashion-MNIST's file names (each label a bright band).
def write_idx_split(folder, name, n):
    with open(os.path.join(folder, f"{name}-images-idx3-ubyte"), "wb") as im, \
         open(os.path.join(folder, f"{name}-labels-idx1-ubyte"), "wb") as lb:
        im.write(struct.pack(">IIII", 0x803, n, 28, 28))
        lb.write(struct.pack(">II", 0x801, n))
        for i in range(n):
            label = (i * 7 + 3) % 10
            im.write(bytes((200 + (i + c) % 50) if r // 3 == label else (i * 31 + r * 7 + c) % 40
                           for r in range(28) for c in range(28)))
            lb.write(bytes([label]))

work = tempfile.mkdtemp()
write_idx_split(work, "train", 256)
write_idx_split(work, "t10k", 64)
r = ember.fit(model="mlp", epochs=2, batch_size=32, threads=1, workers=0, seed=7, lr=0.05, optimizer="sgd", val_split=0.25,
              verbose=0, data_dir=work, run_dir=os.path.join(work, "run"))
print(f"ember.fit: {r.status}, {r.step} steps, test accuracy {r.test_accuracy}, train loss "
      f"{[round(h['train_loss'], 4) for h in r.history]}")
assert r.status == "completed" and r.step > 0, r
assert r.history[-1]["train_loss"] < r.history[0]["train_loss"], r.history

# 3. The doctor: the same report as `ember doctor --json`, with a verdict.
report = ember.doctor(audit_python=False)
print("doctor verdict:", report["verdict"])
assert "verdict" in report and report["checks"], report
print("bare-root smoke: OK")
