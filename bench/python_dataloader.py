"""Issue 47's data benchmark: torchvision's datasets + transforms + torch.utils.data.DataLoader, and
the same program on ember with only its imports changed (`--framework ember`: `import ember as torch`,
`from ember.vision import datasets, transforms`). Prints one JSON line: images/s over the timed
batches (the first batch, which starts the workers, is not timed).

  python bench/python_dataloader.py --framework torch|ember --case fashion|cifar|folder --root DIR
         [--workers 2] [--batch-size 64] [--batches 0 = one epoch]

  fashion: FashionMNIST(root, train=True, transform=Compose([ToTensor(), Normalize((0.2860,), (0.3530,))]))
  cifar:   CIFAR10(root, train=True, transform=Compose([RandomCrop(32, padding=4), RandomHorizontalFlip(),
           ToTensor(), Normalize(CIFAR's mean, std)]))   (torchvision's MD5 check is skipped: the
           benchmark's CIFAR folder is a stand-in with CIFAR's layout and size)
  folder:  ImageFolder(root, transform=Compose([RandomResizedCrop(224), RandomHorizontalFlip(),
           ToTensor(), Normalize(ImageNet's mean, std)]))
All shuffle=True. bench/python_dataloader.sh runs both frameworks alternately and prints the medians."""
import argparse
import json
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--framework", choices=["torch", "ember"], required=True)
    ap.add_argument("--case", choices=["fashion", "cifar", "folder"], required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--batches", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    if a.framework == "torch":
        import torch
        from torchvision import datasets, transforms
        import torchvision.datasets.cifar as _cifar
        _cifar.check_integrity = lambda *a, **k: True  # the stand-in folder has other MD5s than CIFAR-10's
    else:
        import ember as torch
        from ember.vision import datasets, transforms
    torch.set_num_threads(a.threads)
    T = transforms
    if a.case == "fashion":
        ds = datasets.FashionMNIST(a.root, train=True, download=False,
                                   transform=T.Compose([T.ToTensor(), T.Normalize((0.2860,), (0.3530,))]))
    elif a.case == "cifar":
        ds = datasets.CIFAR10(a.root, train=True, download=False, transform=T.Compose([
            T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
            T.Normalize((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))]))
    else:
        ds = datasets.ImageFolder(a.root, transform=T.Compose([
            T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
            T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]))
    loader = torch.utils.data.DataLoader(ds, batch_size=a.batch_size, shuffle=True, num_workers=a.workers)
    it = iter(loader)
    first = next(it)
    shape = list(first[0].shape)
    n, t0 = 0, time.perf_counter()
    for i, (x, y) in enumerate(it, 1):
        n += x.shape[0]
        if a.batches and i >= a.batches:
            break
    dt = time.perf_counter() - t0
    print(json.dumps({"framework": a.framework, "case": a.case, "workers": a.workers, "batch_shape": shape,
                      "images": n, "seconds": round(dt, 3), "images_per_s": round(n / dt, 1)}))


if __name__ == "__main__":
    main()
