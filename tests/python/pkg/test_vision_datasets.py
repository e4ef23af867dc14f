"""ember.vision.datasets against torchvision.datasets on the same folders (torchvision's layouts,
built here in tmp dirs): same len, data, targets, classes, order and items; golden values
(tests/python/golden/vision_datasets.json) when torchvision is not importable. Bad input: a corrupt
IDX, a hostile pickle (nothing executed), a wrong root, a truncated image, downloads that fail their
SHA-256 check — each a typed error with a piece of its message."""

import functools
import gzip
import hashlib
import http.server
import os
import pickle
import shutil
import sys
import threading

import numpy as np
import pytest
from PIL import Image

import ember
from ember.vision import datasets
from torch_golden import Golden, torch

try:
    import torchvision.datasets as tvd
except ImportError:
    tvd = None

golden = Golden("vision_datasets.json")


@pytest.fixture(autouse=True)
def _case_keys(request):
    golden.start(request.node.nodeid)


def ref(thunk):
    """torchvision's side of a comparison (recorded to / read from the golden file)."""
    if torch is not None and tvd is None:
        pytest.skip("torch is importable but torchvision is not")
    return golden.reference(thunk)["value"]


def digest(a):
    return hashlib.sha256(np.ascontiguousarray(np.asarray(a)).tobytes()).hexdigest()


def rel(samples, root):
    return [[os.path.relpath(p, root), t] for p, t in samples]


# ---- IDX (MNIST family) ----------------------------------------------------------------------------

def idx_bytes(a):
    a = np.ascontiguousarray(a, dtype=np.uint8)
    header = bytes([0, 0, 8, a.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in a.shape)
    return header + a.tobytes()


def mnist_arrays(n, seed):
    i = np.arange(n * 28 * 28, dtype=np.int64)
    images = ((i * 7 + seed * 13 + (i // 28) * 3) % 256).astype(np.uint8).reshape(n, 28, 28)
    labels = ((np.arange(n) * 3 + seed) % 10).astype(np.uint8)
    return images, labels


def write_mnist(folder, gz=False, n_train=12, n_test=5):
    os.makedirs(folder, exist_ok=True)
    for split, n, seed in (("train", n_train, 1), ("t10k", n_test, 2)):
        images, labels = mnist_arrays(n, seed)
        for name, a in ((f"{split}-images-idx3-ubyte", images), (f"{split}-labels-idx1-ubyte", labels)):
            b = idx_bytes(a)
            if gz:
                with gzip.open(os.path.join(folder, name + ".gz"), "wb") as f:
                    f.write(b)
            else:
                with open(os.path.join(folder, name), "wb") as f:
                    f.write(b)


@pytest.mark.parametrize("cls", ["MNIST", "FashionMNIST", "KMNIST"])
@pytest.mark.parametrize("gz", [False, True])
def test_mnist_family_in_torchvisions_layout_matches_torchvision(tmp_path, cls, gz):
    root = tmp_path / "data"
    write_mnist(root / cls / "raw", gz=gz)
    if gz:  # torchvision reads only the un-gzipped files it extracts: give it those too
        write_mnist(root / cls / "raw", gz=False)
    for train in (True, False):
        ds = getattr(datasets, cls)(str(root), train=train)
        tv = (lambda: getattr(tvd, cls)(str(root), train=train)) if tvd else None
        assert len(ds) == ref(lambda: len(tv()))
        assert isinstance(ds.data, ember.Tensor) and ds.data.dtype == ember.uint8
        assert tuple(ds.data.shape) == (len(ds), 28, 28)
        assert isinstance(ds.targets, ember.Tensor) and ds.targets.dtype == ember.int64
        assert digest(ds.data.numpy()) == ref(lambda: digest(tv().data.numpy()))
        assert ds.targets.numpy().tolist() == ref(lambda: tv().targets.tolist())
        assert ds.classes == ref(lambda: tv().classes)
        assert ds.class_to_idx == ref(lambda: tv().class_to_idx)
        assert ds.raw_folder == os.path.join(str(root), cls, "raw")
        img, target = ds[3]
        assert isinstance(img, Image.Image) and img.mode == "L" and img.size == (28, 28)
        assert [digest(np.asarray(img)), target] == ref(lambda: [digest(np.asarray(tv()[3][0])), tv()[3][1]])
        assert repr(ds).replace(str(root), "ROOT") == ref(lambda: repr(tv()).replace(str(root), "ROOT"))


def test_mnist_transforms_and_repr(tmp_path):
    write_mnist(tmp_path / "MNIST" / "raw")

    class Twice:
        def __call__(self, x):
            return ("img", x.size)

        def __repr__(self):
            return "Twice()"

    ds = datasets.MNIST(tmp_path, train=False, transform=Twice(), target_transform=lambda t: t + 100)
    assert ds[0] == (("img", (28, 28)), int(mnist_arrays(5, 2)[1][0]) + 100)
    assert ds.train is False and ds.root == tmp_path
    assert repr(ds).splitlines()[:4] == ["Dataset MNIST", "    Number of datapoints: 5",
                                         f"    Root location: {tmp_path}", "    Split: Test"]
    assert "    StandardTransform" in repr(ds) and "Transform: Twice()" in repr(ds)
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform"):
        datasets.MNIST.__mro__[1].__init__(ds, tmp_path, transforms=lambda a, b: (a, b), transform=Twice())


def test_ember_layout_folder_as_root(tmp_path):
    """ember data fetch's folder (or Debian's /usr/share/datasets/fashion-mnist): the four files
    in root itself, gzipped."""
    write_mnist(tmp_path, gz=True)
    ds = datasets.FashionMNIST(tmp_path)
    images, labels = mnist_arrays(12, 1)
    np.testing.assert_array_equal(ds.data.numpy(), images)
    assert ds.targets.numpy().tolist() == labels.tolist()
    assert ds.classes[0] == "T-shirt/top" and ds.class_to_idx["Ankle boot"] == 9


@pytest.mark.skipif(not os.path.isdir("/usr/share/datasets/fashion-mnist"),
                    reason="Debian's dataset-fashion-mnist is not installed")
def test_debian_fashion_mnist_folder():
    ds = datasets.FashionMNIST("/usr/share/datasets/fashion-mnist", train=False)
    assert len(ds) == 10000 and tuple(ds.data.shape) == (10000, 28, 28)
    assert ds[0][1] == 9  # the first test image is an ankle boot


def test_mnist_missing_files_say_where_ember_looked(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError) as e:
        datasets.MNIST(tmp_path / "nowhere")
    msg = str(e.value)
    assert msg.startswith("Dataset not found. You can use download=True to download it")
    assert os.path.join(str(tmp_path / "nowhere"), "MNIST", "raw") in msg
    assert "train-images-idx3-ubyte[.gz]" in msg
    assert "ember data fetch mnist --data-dir" in msg
    # Only the test split present: the train split is still missing.
    write_mnist(tmp_path / "MNIST" / "raw")
    os.remove(tmp_path / "MNIST" / "raw" / "train-labels-idx1-ubyte")
    with pytest.raises(RuntimeError, match="Dataset not found"):
        datasets.MNIST(tmp_path)
    assert len(datasets.MNIST(tmp_path, train=False)) == 5
    # download=True wants all four files (torchvision's check): it tries to fetch the missing one.
    monkeypatch.setattr(datasets.MNIST, "mirrors", ["http://127.0.0.1:1/"])
    with pytest.raises(RuntimeError, match="Error downloading mnist"):
        datasets.MNIST(tmp_path, train=False, download=True)


def test_corrupt_idx_is_a_data_error_naming_the_file(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    write_mnist(raw)
    with open(raw / "train-images-idx3-ubyte", "r+b") as f:
        f.truncate(1000)
    with pytest.raises(ember.errors.DataError, match="train-images-idx3-ubyte"):
        datasets.MNIST(tmp_path)
    # A label file given 11 classes' worth of labels for 10 classes.
    write_mnist(raw)
    with open(raw / "t10k-labels-idx1-ubyte", "wb") as f:
        f.write(idx_bytes(np.array([1, 2, 10, 3, 4], dtype=np.uint8)))
    with pytest.raises(ember.errors.DataError, match="label"):
        datasets.MNIST(tmp_path, train=False)
    # Images and labels swapped.
    write_mnist(raw)
    shutil.copy(raw / "t10k-labels-idx1-ubyte", raw / "t10k-images-idx3-ubyte")
    with pytest.raises(ember.errors.DataError):
        datasets.MNIST(tmp_path, train=False)


# ---- downloads (a local HTTP server) -----------------------------------------------------------------

class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def http_dir(tmp_path):
    """(folder served, its URL) on 127.0.0.1, and the paths the server was asked for."""
    served = tmp_path / "served"
    served.mkdir()
    requests = []

    class Handler(_Quiet):
        def do_GET(self):
            requests.append(self.path)
            super().do_GET()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}/", requests
    server.shutdown()
    server.server_close()


@pytest.mark.skipif(not os.path.isdir("/usr/share/datasets/fashion-mnist"),
                    reason="Debian's dataset-fashion-mnist (files with a known SHA-256) is not installed")
def test_download_fetches_verified_files_into_torchvisions_layout(tmp_path, http_dir, monkeypatch):
    served, url, requests = http_dir
    for f in os.listdir("/usr/share/datasets/fashion-mnist"):
        shutil.copy(os.path.join("/usr/share/datasets/fashion-mnist", f), served / f)
    monkeypatch.setattr(datasets.FashionMNIST, "mirrors", ["http://127.0.0.1:1/", url])  # the first one refuses
    root = tmp_path / "root"
    ds = datasets.FashionMNIST(root, train=False, download=True)
    assert len(ds) == 10000
    assert sorted(os.listdir(root / "FashionMNIST" / "raw")) == sorted(os.listdir(served))
    assert len(requests) == 4
    # Present: nothing is fetched again.
    datasets.FashionMNIST(root, train=True, download=True)
    assert len(requests) == 4


def test_download_refuses_files_that_fail_their_sha256(tmp_path, http_dir, monkeypatch):
    served, url, requests = http_dir
    write_mnist(served, gz=True)  # valid IDX files, but not MNIST's: their SHA-256 differs
    monkeypatch.setattr(datasets.MNIST, "mirrors", [url])
    with pytest.raises(RuntimeError) as e:
        datasets.MNIST(tmp_path, download=True)
    assert "Error downloading mnist" in str(e.value) and "SHA-256 mismatch" in str(e.value)
    assert url in str(e.value)
    assert not os.path.exists(tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte.gz")  # nothing unverified kept


def test_download_does_nothing_when_files_are_present(tmp_path, monkeypatch):
    write_mnist(tmp_path / "KMNIST" / "raw")  # torchvision's un-gzipped files
    monkeypatch.setattr(datasets.KMNIST, "mirrors", ["http://127.0.0.1:1/"])  # would fail if asked
    assert len(datasets.KMNIST(tmp_path, download=True)) == 12
    write_cifar_python(tmp_path)
    monkeypatch.setattr(datasets.CIFAR10, "mirrors", ["http://127.0.0.1:1/"])
    assert len(datasets.CIFAR10(tmp_path, download=True)) == 10


def test_cifar_download_unreachable_mirror_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.CIFAR10, "mirrors", ["http://127.0.0.1:1/"])
    with pytest.raises(RuntimeError, match="Tried http://127.0.0.1:1/"):
        datasets.CIFAR10(tmp_path, download=True)


# ---- CIFAR ------------------------------------------------------------------------------------------

LABEL_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def cifar_arrays(n, seed, num_classes=10):
    i = np.arange(n * 3072, dtype=np.int64)
    data = ((i * 5 + seed * 31 + (i // 1024) * 11) % 256).astype(np.uint8).reshape(n, 3072)
    labels = [int(x) for x in (np.arange(n) * 7 + seed) % num_classes]
    return data, labels


def write_cifar_python(root, protocol=pickle.DEFAULT_PROTOCOL):
    """cifar-10-batches-py as torchvision downloads it (pickled dicts of a NumPy array and lists)."""
    d = os.path.join(root, "cifar-10-batches-py")
    os.makedirs(d, exist_ok=True)
    for k, name in enumerate(["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5",
                              "test_batch"]):
        data, labels = cifar_arrays(2 if name != "test_batch" else 3, k)
        with open(os.path.join(d, name), "wb") as f:
            pickle.dump({"batch_label": f"batch {k}", "labels": labels, "data": data,
                         "filenames": [f"f{j}.png" for j in range(len(labels))]}, f, protocol=protocol)
    with open(os.path.join(d, "batches.meta"), "wb") as f:
        pickle.dump({"num_cases_per_batch": 2, "label_names": LABEL_NAMES, "num_vis": 3072}, f, protocol=protocol)
    return d


def write_cifar100_python(root):
    d = os.path.join(root, "cifar-100-python")
    os.makedirs(d, exist_ok=True)
    for k, name in enumerate(["train", "test"]):
        data, fine = cifar_arrays(4 if name == "train" else 2, k, 100)
        coarse = [x // 5 for x in fine]
        with open(os.path.join(d, name), "wb") as f:
            pickle.dump({b"filenames": [b"a"] * len(fine), b"batch_label": b"x", b"fine_labels": fine,
                         b"coarse_labels": coarse, b"data": data}, f, protocol=2)  # bytes keys, protocol 2
    with open(os.path.join(d, "meta"), "wb") as f:
        pickle.dump({"fine_label_names": [f"class{i:02d}" for i in range(100)],
                     "coarse_label_names": [f"super{i}" for i in range(20)]}, f)
    return d


def tv_cifar(cls, root, train):
    """torchvision's class without its MD5 checks (the files here are stand-ins)."""
    base = getattr(tvd, cls)

    class NoMd5(base):
        train_list = [[n, None] for n, _ in base.train_list]
        test_list = [[n, None] for n, _ in base.test_list]
        meta = dict(base.meta, md5=None)

    NoMd5.__name__ = cls
    return NoMd5(str(root), train=train)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_cifar10_pickled_batches_match_torchvision(tmp_path, protocol):
    write_cifar_python(tmp_path, protocol)
    for train in (True, False):
        ds = datasets.CIFAR10(tmp_path, train=train)
        tv = lambda: tv_cifar("CIFAR10", tmp_path, train)  # noqa: E731
        assert isinstance(ds.data, np.ndarray) and ds.data.dtype == np.uint8
        assert ds.data.shape == tuple(ref(lambda: list(tv().data.shape)))
        assert digest(ds.data) == ref(lambda: digest(tv().data))
        assert isinstance(ds.targets, list) and ds.targets == ref(lambda: tv().targets)
        assert ds.classes == ref(lambda: tv().classes) == LABEL_NAMES
        assert ds.class_to_idx == ref(lambda: tv().class_to_idx)
        img, target = ds[1]
        assert img.mode == "RGB" and img.size == (32, 32)
        assert [digest(np.asarray(img)), target] == ref(lambda: [digest(np.asarray(tv()[1][0])), tv()[1][1]])
        assert repr(ds).replace(str(tmp_path), "ROOT") == ref(lambda: repr(tv()).replace(str(tmp_path), "ROOT"))


def test_cifar100_pickled_batches_with_bytes_keys_match_torchvision(tmp_path):
    write_cifar100_python(tmp_path)
    ds = datasets.CIFAR100(tmp_path, train=True)
    tv = lambda: tv_cifar("CIFAR100", tmp_path, True)  # noqa: E731
    # torchvision reads with encoding="latin1", which keeps bytes keys bytes: it cannot find "data"
    # in this file, ember reads str and bytes keys alike. Compare with what the file holds.
    data, fine = cifar_arrays(4, 0, 100)
    np.testing.assert_array_equal(ds.data, data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    assert ds.targets == fine
    assert ds.classes[:2] == ["class00", "class01"] and len(ds.class_to_idx) == 100
    assert len(datasets.CIFAR100(tmp_path, train=False)) == 2
    del tv


def write_cifar_binary(root):
    d = os.path.join(root, "cifar-10-batches-bin")
    os.makedirs(d, exist_ok=True)
    for k, name in enumerate(["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5",
                              "test_batch"]):
        data, labels = cifar_arrays(2 if name != "test_batch" else 3, k)
        with open(os.path.join(d, name + ".bin"), "wb") as f:
            for row, label in zip(data, labels):
                f.write(bytes([label]) + row.tobytes())
    with open(os.path.join(d, "batches.meta.txt"), "w") as f:
        f.write("\n".join(LABEL_NAMES) + "\n\n")
    return d


def test_cifar10_binary_version_equals_the_pickled_one(tmp_path):
    write_cifar_python(tmp_path / "py")
    write_cifar_binary(tmp_path / "bin")
    for train in (True, False):
        a, b = datasets.CIFAR10(tmp_path / "py", train=train), datasets.CIFAR10(tmp_path / "bin", train=train)
        np.testing.assert_array_equal(a.data, b.data)
        assert a.targets == b.targets and a.classes == b.classes
        assert np.asarray(a[2][0]).tolist() == np.asarray(b[2][0]).tolist()
    # The folder itself as root.
    assert len(datasets.CIFAR10(tmp_path / "bin" / "cifar-10-batches-bin")) == 10


def test_cifar_hostile_pickle_is_refused_and_nothing_runs(tmp_path):
    d = write_cifar_python(tmp_path)
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    with open(os.path.join(d, "data_batch_3"), "wb") as f:
        pickle.dump({"data": Evil(), "labels": [1]}, f)
    with pytest.raises(ember.errors.ForbiddenGlobalError) as e:
        datasets.CIFAR10(tmp_path)
    assert e.value.global_name in ("posix.system", "os.system")
    assert "data_batch_3: refused" in str(e.value) and "nothing was called" in str(e.value)
    assert isinstance(e.value, pickle.UnpicklingError)
    assert not marker.exists()


def test_cifar_bad_batches_are_typed_errors(tmp_path):
    d = write_cifar_python(tmp_path)
    with open(os.path.join(d, "test_batch"), "wb") as f:
        pickle.dump({"data": np.zeros((2, 3072), np.uint8), "labels": [1, 10]}, f)
    with pytest.raises(ember.errors.DataError, match=r"'labels'\[1\] is 10"):
        datasets.CIFAR10(tmp_path, train=False)
    with open(os.path.join(d, "test_batch"), "wb") as f:
        pickle.dump({"data": np.zeros((2, 3072), np.float32), "labels": [1, 2]}, f)
    with pytest.raises(ember.errors.DataError, match="f4 array"):
        datasets.CIFAR10(tmp_path, train=False)
    with open(os.path.join(d, "test_batch"), "wb") as f:
        f.write(pickle.dumps({"data": np.zeros((2, 3072), np.uint8), "labels": [1, 2]})[:500])
    with pytest.raises(ember.errors.UnpicklingError, match="truncated"):
        datasets.CIFAR10(tmp_path, train=False)
    os.remove(os.path.join(d, "data_batch_4"))
    with pytest.raises(ember.errors.IOError, match="missing data_batch_4"):
        datasets.CIFAR10(tmp_path, train=True)


def test_cifar_missing_root(tmp_path):
    with pytest.raises(RuntimeError) as e:
        datasets.CIFAR10(tmp_path / "none")
    msg = str(e.value)
    assert msg.startswith("Dataset not found or corrupted. You can use download=True to download it")
    assert os.path.join(str(tmp_path / "none"), "cifar-10-batches-py", "test_batch") in msg
    assert "ember data fetch cifar10" in msg


# ---- ImageFolder / DatasetFolder ----------------------------------------------------------------

def write_image_folder(root):
    rng = np.random.default_rng(0)
    files = {
        "dog/b.png": "PNG", "dog/a.JPG": "JPEG", "dog/sub/z/c.png": "PNG", "dog/sub/y.bmp": "BMP",
        "cat/x.jpeg": "JPEG", "cat/notes.txt": None, "cat/w.webp": "WEBP", "Bird/1.ppm": "PPM",
        "Bird/2.tiff": "TIFF", "Bird/gray.pgm": "PPM",
    }
    for rel_path, fmt in files.items():
        p = os.path.join(root, rel_path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if fmt is None:
            with open(p, "w") as f:
                f.write("not an image")
            continue
        mode = "L" if rel_path.endswith(".pgm") else "RGB"
        shape = (6, 5) if mode == "L" else (6, 5, 3)
        Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode=None).save(
            p, format=fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    os.makedirs(os.path.join(root, "empty"))
    return root


def test_image_folder_matches_torchvision(tmp_path):
    root = write_image_folder(str(tmp_path / "imgs"))
    os.rmdir(os.path.join(root, "empty"))
    ds = datasets.ImageFolder(root)
    tv = lambda: tvd.ImageFolder(root)  # noqa: E731
    assert ds.classes == ref(lambda: tv().classes) == ["Bird", "cat", "dog"]
    assert ds.class_to_idx == ref(lambda: tv().class_to_idx)
    assert rel(ds.samples, root) == ref(lambda: rel(tv().samples, root))
    assert ds.imgs is ds.samples and ds.targets == ref(lambda: tv().targets)
    assert len(ds) == 9
    for i in range(len(ds)):
        img, target = ds[i]
        assert img.mode == "RGB"
        assert [digest(np.asarray(img)), target] == ref(lambda: [digest(np.asarray(tv()[i][0])), tv()[i][1]])


def test_image_folder_options_match_torchvision(tmp_path):
    root = write_image_folder(str(tmp_path / "imgs"))
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes empty"):
        datasets.ImageFolder(root)
    ds = datasets.ImageFolder(root, allow_empty=True)
    assert ds.classes == ["Bird", "cat", "dog", "empty"] and len(ds) == 9
    valid = lambda p: p.endswith(".png") or p.endswith(".txt")  # noqa: E731
    ds = datasets.ImageFolder(root, is_valid_file=valid, allow_empty=True)
    assert rel(ds.samples, root) == ref(lambda: rel(tvd.ImageFolder(root, is_valid_file=valid,
                                                                    allow_empty=True).samples, root))
    dsf = datasets.DatasetFolder(root, loader=lambda p: os.path.getsize(p), extensions=(".txt",), allow_empty=True)
    assert rel(dsf.samples, root) == [["cat/notes.txt", 1]] and dsf[0] == (12, 1)
    with pytest.raises(ValueError, match="Both extensions and is_valid_file"):
        datasets.DatasetFolder(root, loader=open)
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        datasets.ImageFolder(os.path.join(root, "empty"))
    classes, class_to_idx = datasets.find_classes(root)
    assert class_to_idx == {"Bird": 0, "cat": 1, "dog": 2, "empty": 3}
    assert classes == ["Bird", "cat", "dog", "empty"]
    assert datasets.make_dataset(root, {"Bird": 0}, extensions=".ppm") == [(os.path.join(root, "Bird", "1.ppm"), 0)]
    assert datasets.is_image_file("A.PNG") and not datasets.is_image_file("a.txt")
    assert list(datasets.IMG_EXTENSIONS) == ref(lambda: list(tvd.folder.IMG_EXTENSIONS))


def test_truncated_image_raises_as_torchvision_naming_the_file(tmp_path):
    root = write_image_folder(str(tmp_path / "imgs"))
    bad = os.path.join(root, "dog", "b.png")
    with open(bad, "r+b") as f:
        f.truncate(60)
    ds = datasets.ImageFolder(root, allow_empty=True)
    index = [p for p, _ in ds.samples].index(bad)
    with pytest.raises(OSError) as e:
        ds[index]
    assert bad in str(e.value)
    assert type(e.value).__name__ == ref(lambda: _raised(lambda: tvd.ImageFolder(root, allow_empty=True)[index]))
    junk = os.path.join(root, "cat", "x.jpeg")
    with open(junk, "wb") as f:
        f.write(b"garbage, not a jpeg")
    with pytest.raises(OSError) as e:
        datasets.ImageFolder(root, allow_empty=True)[[p for p, _ in ds.samples].index(junk)]
    assert junk in str(e.value) and isinstance(e.value, __import__("PIL").UnidentifiedImageError)


def _raised(thunk):
    try:
        thunk()
    except Exception as e:  # noqa: BLE001 (the type is the value compared)
        return type(e).__name__
    return None


# ---- SVHN ---------------------------------------------------------------------------------------------

def test_svhn(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        datasets.SVHN(tmp_path)
    with pytest.raises(RuntimeError, match="no SHA-256 for train_32x32.mat"):
        datasets.SVHN(tmp_path, download=True)
    with pytest.raises(ValueError, match="Unknown value 'dev' for argument split"):
        datasets.SVHN(tmp_path, split="dev")
    (tmp_path / "test_32x32.mat").write_bytes(b"MATLAB 5.0")
    with monkeypatch.context() as m:  # as on a machine without scipy
        m.setitem(sys.modules, "scipy", None)
        m.setitem(sys.modules, "scipy.io", None)
        with pytest.raises(ImportError, match="pip install scipy"):
            datasets.SVHN(tmp_path, split="test")
    sio = pytest.importorskip("scipy.io")
    x = np.arange(32 * 32 * 3 * 4, dtype=np.uint8).reshape(32, 32, 3, 4)
    sio.savemat(tmp_path / "test_32x32.mat", {"X": x, "y": np.array([[10], [1], [2], [10]], np.uint8)})
    ds = datasets.SVHN(tmp_path, split="test")
    assert ds.labels.tolist() == [0, 1, 2, 0] and ds.data.shape == (4, 3, 32, 32)
    np.testing.assert_array_equal(np.asarray(ds[1][0]), x[:, :, :, 1])
    if tvd is not None:  # torchvision's class on the same file (its MD5 check off: a stand-in file)
        class TvSVHN(tvd.SVHN):
            split_list = {k: [u, f, None] for k, (u, f, _) in tvd.SVHN.split_list.items()}

        TvSVHN.__name__ = "SVHN"
        tv = TvSVHN(str(tmp_path), split="test")
        np.testing.assert_array_equal(ds.data, tv.data)
        assert ds.labels.tolist() == tv.labels.tolist() and repr(ds) == repr(tv)
        assert np.asarray(ds[2][0]).tolist() == np.asarray(tv[2][0]).tolist()


def test_zz_write_goldens():
    """Writes torchvision's side of every comparison above (run last, with EMBER_WRITE_TORCH_GOLDENS=1)."""
    golden.write()


def test_a_dataloader_batches_mnist_and_cifar(tmp_path):
    """The datasets in ember.utils.data.DataLoader, as a training program uses them (the transform a
    stand-in for ToTensor, which is ember.vision.transforms' business)."""
    from ember.utils.data import DataLoader

    to_tensor = lambda img: ember.from_numpy(np.asarray(img, dtype=np.float32) / 255)  # noqa: E731
    write_mnist(tmp_path / "MNIST" / "raw")
    write_cifar_python(tmp_path)
    for ds in (datasets.MNIST(tmp_path, transform=to_tensor), datasets.CIFAR10(tmp_path, transform=to_tensor)):
        batches = list(DataLoader(ds, batch_size=4, shuffle=False))
        assert len(batches) == 3
        x, y = batches[0]
        assert tuple(x.shape)[0] == 4 and y.numpy().tolist() == [int(t) for t in ds.targets[:4]]
        np.testing.assert_allclose(x.numpy()[1], np.asarray(ds[1][0].numpy()))
