"""DataLoader over a Python Dataset with a small per-item cost (a 28x28 float image computed with
NumPy, REPEATS passes of sin; 100 is about 0.1 ms an item here): samples/s for num_workers=0 and 2, ember.utils.data or
torch.utils.data, batch_size 64. SHAPE (default 1x28x28) sets the image's shape: 3x224x224 with REPEATS 0 measures
how batches of photos cross from the workers (a 38.5 MB batch).
usage: python bench/utils_data_workers.py ember|ember-pipe|torch [N [REPEATS [SHAPE]]]"""

import sys
import time

import numpy as np

which = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
REPEATS = int(sys.argv[3]) if len(sys.argv) > 3 else 100
SHAPE = tuple(int(v) for v in sys.argv[4].split("x")) if len(sys.argv) > 4 else (1, 28, 28)
if which == "torch":
    import torch
    from torch.utils.data import DataLoader, Dataset
    torch.manual_seed(0)
else:
    import ember
    from ember.utils.data import DataLoader, Dataset
    ember.manual_seed(0)
    if which == "ember-pipe":  # batches pickled through the pipe, as before shared memory (for the comparison)
        import ember.utils.data._worker as _worker
        _worker.shm_prefix = lambda iterator_id: None


class Images(Dataset):
    def __init__(self, n):
        self.n = n
        self.base = np.random.default_rng(0).random(SHAPE[1:], dtype=np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        img = self.base * (i % 97)
        for _ in range(REPEATS):  # the per-item cost: REPEATS passes of sin over 784 floats
            img = np.sin(img)
        img = img * 0.5 + 0.5
        return np.broadcast_to((img - 0.1307) / 0.3081, SHAPE).copy(), i % 10


if __name__ == "__main__":
    for workers in (0, 2):
        loader = DataLoader(Images(n), batch_size=64, shuffle=True, num_workers=workers)
        list(DataLoader(Images(256), batch_size=64, num_workers=workers))  # warm the imports
        start = time.perf_counter()
        count = sum(len(y) for _, y in loader)
        took = time.perf_counter() - start
        print(f"{which} num_workers={workers}: {count / took:,.0f} samples/s ({took:.2f} s for {count})", flush=True)
