"""ember.vision.models against torchvision.models (issue 47): every architecture's state_dict keys and
shapes are torchvision's; given the same weights (made by ember from a seed, written with ember.save,
read by torch.load) the eval-mode outputs agree; train mode runs forward/backward and an SGD step
changes the weights; torchvision tutorials' surgery (model.fc = nn.Linear(512, 10), features[0])
works; weights= reads a torchvision file from torch hub's cache or a path, and says where to put a
missing one. torchvision's side comes from torchvision, or from tests/python/golden/vision_models.json
without it (torch_golden.py)."""

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.errors import NotInEmberError
from ember.vision import models
from torch_golden import Golden, torch

golden = Golden("vision_models.json")

try:
    import torchvision
except ImportError:
    torchvision = None


@pytest.fixture(autouse=True)
def _case_keys(request):
    golden.start(request.node.nodeid)


@pytest.fixture
def weights_cache(tmp_path, monkeypatch):
    """An empty torch hub cache and ember cache (TORCH_HOME, XDG_CACHE_HOME): the checkpoints folder."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder = tmp_path / "torch" / "hub" / "checkpoints"
    folder.mkdir(parents=True)
    return folder


ARCHS = ["resnet18", "resnet34", "resnet50", "alexnet", "vgg11", "vgg11_bn", "vgg16", "vgg16_bn", "mobilenet_v2",
         "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet_b0"]


def build(name, **kwargs):
    if name.startswith("vgg"):
        kwargs.setdefault("init_weights", False)  # VGG's init of 130M weights is slow and changes no key
    return getattr(models, name)(**kwargs)


@pytest.mark.parametrize("name", ARCHS)
def test_state_dict_keys_and_shapes_are_torchvisions(name):
    ours = [[k, list(v.shape)] for k, v in build(name, num_classes=10).state_dict().items()]

    def theirs():
        tv = getattr(torchvision.models, name)(num_classes=10)
        return [[k, list(v.shape)] for k, v in tv.state_dict().items()]

    assert ours == golden.reference(theirs)["value"]


def seeded_model(name, seed=0):
    """The architecture with weights drawn by ember from seed, BatchNorm's running statistics moved off
    (0, 1) so eval mode uses them, in eval mode."""
    ember.manual_seed(seed)
    m = getattr(models, name)(num_classes=10)
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.1, 0.1)
            mod.running_var.uniform_(0.5, 1.5)
    return m.eval()


def torchvision_output(name, model, x, tmp_path):
    """torchvision's model given model's weights through a file ember.save wrote, run on x."""
    def run():
        path = tmp_path / f"{name}.pth"
        ember.save(model.state_dict(), path)
        tv = getattr(torchvision.models, name)(num_classes=10)
        tv.load_state_dict(torch.load(path, weights_only=True))
        with torch.no_grad():
            return tv.eval()(torch.from_numpy(x.numpy()))
    return run


@pytest.mark.parametrize("name", ["resnet18", "resnet50", "alexnet", "vgg11", "mobilenet_v2", "mobilenet_v3_small",
                                  "mobilenet_v3_large", "efficientnet_b0"])
def test_eval_forward_equals_torchvisions_for_the_same_weights(name, tmp_path):
    model = seeded_model(name)
    ember.manual_seed(1)
    x = ember.randn([1, 3, 64, 64])
    with ember.no_grad():
        y = model(x)
    assert list(y.shape) == [1, 10]
    ref = golden.reference(torchvision_output(name, model, x, tmp_path))
    expected = np.asarray(ref["values"], dtype=np.float64).reshape(ref["shape"])
    scale = float(np.abs(expected).max())
    assert scale > 0
    np.testing.assert_allclose(y.numpy().astype(np.float64), expected, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small", "efficientnet_b0"])
def test_train_mode_forward_backward_and_sgd_step_changes_weights(name):
    ember.manual_seed(0)
    model = getattr(models, name)(num_classes=4).train()
    x = ember.randn([2, 3, 32, 32])
    target = ember.tensor([1, 3])
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    loss = nn.functional.cross_entropy(model(x), target)
    opt.zero_grad()
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    opt.step()
    after = dict(model.named_parameters())
    first_conv = next(k for k in before if k.endswith("weight"))
    assert not ember.equal(before[first_conv], after[first_conv].detach())
    assert not ember.equal(before[list(before)[-1]], after[list(before)[-1]].detach())
    assert int(model.state_dict()[[k for k in model.state_dict() if k.endswith("num_batches_tracked")][0]]) == 1


def test_stochastic_depth_drops_whole_rows_in_training_and_is_the_identity_in_eval():
    from ember.vision.models._ops import StochasticDepth, stochastic_depth

    x = ember.ones([400, 3, 2, 2])
    sd = StochasticDepth(0.25, "row")
    assert sd.eval()(x) is x
    ember.manual_seed(0)
    y = sd.train()(x).numpy().reshape(400, -1)
    rows = y[:, 0]
    assert set(np.unique(y).tolist()) <= {0.0, float(np.float32(1 / 0.75))}
    assert (y == rows[:, None]).all(), "a row is dropped or kept whole"
    assert 0.15 < float((rows == 0).mean()) < 0.35
    assert stochastic_depth(x, 0.0, "row", True) is x
    with pytest.raises(ValueError, match="mode has to be either"):
        stochastic_depth(x, 0.5, "col", True)
    with pytest.raises(ValueError, match="between 0 and 1"):
        stochastic_depth(x, 1.5, "row", True)


def test_tutorial_surgery_replaces_fc_and_indexes_features():
    model = models.resnet18()
    assert isinstance(model.fc, nn.Linear) and model.fc.in_features == 512 and model.fc.out_features == 1000
    model.fc = nn.Linear(512, 10)
    assert "fc.weight" in model.state_dict() and list(model.state_dict()["fc.weight"].shape) == [10, 512]
    assert list(model.eval()(ember.randn([1, 3, 32, 32])).shape) == [1, 10]
    assert isinstance(model.layer1[0], models.resnet.BasicBlock)
    net = models.alexnet(num_classes=5)
    assert isinstance(net.features[0], nn.Conv2d) and net.features[0].out_channels == 64
    net.classifier[6] = nn.Linear(4096, 3)
    assert list(net.eval()(ember.randn([1, 3, 64, 64])).shape) == [1, 3]
    mb = models.mobilenet_v2(num_classes=3)
    assert isinstance(mb.features[0][0], nn.Conv2d) and isinstance(mb.classifier[1], nn.Linear)


def test_weights_enums_carry_torchvisions_url_meta_and_aliases():
    w = models.ResNet18_Weights.IMAGENET1K_V1
    assert w.url == "https://download.pytorch.org/models/resnet18-f37072fd.pth"
    assert models.ResNet18_Weights.DEFAULT is w
    assert models.ResNet50_Weights.DEFAULT is models.ResNet50_Weights.IMAGENET1K_V2
    assert len(w.meta["categories"]) == 1000 and w.meta["categories"][0] == "tench"
    assert repr(w) == "ResNet18_Weights.IMAGENET1K_V1"
    assert models.ResNet18_Weights.verify("IMAGENET1K_V1") is w
    assert models.ResNet18_Weights.verify("ResNet18_Weights.DEFAULT") is w
    with pytest.raises(TypeError, match="expected ResNet18_Weights"):
        models.ResNet18_Weights.verify(models.AlexNet_Weights.DEFAULT)
    assert models.get_weight("ResNet18_Weights.IMAGENET1K_V1") is w
    assert models.get_model_weights("resnet18") is models.ResNet18_Weights
    # meta's num_params is the architecture's parameter count: the table and the code agree
    for name in ["resnet18", "resnet50", "alexnet", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large",
                 "efficientnet_b0"]:
        enum = models.get_model_weights(name)
        count = sum(p.numel() for p in getattr(models, name)().parameters())
        assert count == enum.DEFAULT.meta["num_params"], name
    if torchvision is not None:
        assert w.meta == torchvision.models.ResNet18_Weights.IMAGENET1K_V1.meta
        assert models.EfficientNet_B0_Weights.DEFAULT.url == torchvision.models.EfficientNet_B0_Weights.DEFAULT.url


def test_list_and_get_model():
    names = models.list_models()
    assert {"resnet18", "resnet50", "alexnet", "efficientnet_b0", "mobilenet_v3_small", "vgg16"} <= set(names)
    assert models.list_models(include="resnet*") == ["resnet18", "resnet34", "resnet50"]
    assert isinstance(models.get_model("resnet18", num_classes=3), models.ResNet)
    with pytest.raises(ValueError, match="Unknown model"):
        models.get_model("resnet999")


def test_missing_weights_file_names_the_url_and_the_folder(weights_cache):
    with pytest.raises(FileNotFoundError) as e:
        models.resnet18(weights=models.ResNet18_Weights.IMAGENET1K_V1)
    assert "https://download.pytorch.org/models/resnet18-f37072fd.pth" in str(e.value)
    assert str(weights_cache) in str(e.value)
    with pytest.raises(FileNotFoundError, match="resnet18-f37072fd.pth"):
        models.resnet18(weights="DEFAULT")
    with pytest.raises(FileNotFoundError, match="neither a ResNet18_Weights member"):
        models.resnet18(weights="no/such/file.pth")
    with pytest.warns(UserWarning, match="pretrained"):
        with pytest.raises(FileNotFoundError, match="resnet18-f37072fd.pth"):
            models.resnet18(pretrained=True)


def test_weights_member_reads_torchvisions_file_name_from_the_hub_cache(weights_cache, tmp_path, monkeypatch):
    ember.manual_seed(3)
    src = models.resnet18()
    ember.save(src.state_dict(), weights_cache / "resnet18-f37072fd.pth")
    for weights in (models.ResNet18_Weights.IMAGENET1K_V1, "IMAGENET1K_V1", "DEFAULT"):
        model = models.resnet18(weights=weights)
        assert ember.equal(model.fc.weight, src.fc.weight) and ember.equal(model.conv1.weight, src.conv1.weight)
    # ember's own cache is the second place looked in
    (weights_cache / "resnet18-f37072fd.pth").rename(tmp_path / "moved.pth")
    ember_cache = tmp_path / "xdg" / "ember" / "models"
    ember_cache.mkdir(parents=True)
    (tmp_path / "moved.pth").rename(ember_cache / "resnet18-f37072fd.pth")
    assert ember.equal(models.resnet18(weights="DEFAULT").fc.bias, src.fc.bias)
    with pytest.raises(ValueError, match="expected value 1000 but got 10"):
        models.resnet18(weights="DEFAULT", num_classes=10)


def test_weights_path_with_num_classes_and_the_wrong_architecture(tmp_path):
    ember.manual_seed(4)
    src = models.mobilenet_v3_small(num_classes=7)
    path = tmp_path / "mine.pth"
    ember.save(src.state_dict(), path)
    for weights in (path, str(path)):
        model = models.mobilenet_v3_small(weights=weights, num_classes=7)
        assert ember.equal(model.classifier[3].weight, src.classifier[3].weight)
    with pytest.raises(RuntimeError, match="size mismatch for classifier.3.weight"):
        models.mobilenet_v3_small(weights=path)
    other = tmp_path / "resnet34.pth"
    ember.save(models.resnet34().state_dict(), other)
    with pytest.raises(RuntimeError) as e:
        models.resnet18(weights=other)
    msg = str(e.value)
    assert "do not fit ResNet" in msg and "Unexpected key(s)" in msg and "layer1.2.conv1.weight" in msg


def test_legacy_format_weights_file(tmp_path):
    """torch's legacy (non-zip) pickle stream, the format of torchvision's older weight files, loads too,
    with torch >= 0.4's tensor records and torch 0.3's."""
    if torch is None:
        pytest.skip("torch writes the legacy format file")
    ember.manual_seed(5)
    src = models.mobilenet_v2(num_classes=3)
    state = {k: torch.from_numpy(v.numpy().copy()) for k, v in src.state_dict().items()}
    path = tmp_path / "legacy.pth"
    torch.save(state, path, _use_new_zipfile_serialization=False)
    assert path.read_bytes()[:2] != b"PK"  # not a zip archive
    model = models.mobilenet_v2(weights=path, num_classes=3)
    assert ember.equal(model.features[0][0].weight, src.features[0][0].weight)

    # torch 0.3's tensor record, _rebuild_tensor(storage, offset, size, stride), as the oldest files hold it
    class Torch03Tensor:
        def __init__(self, t):
            self.t = t

        def __reduce__(self):
            t = self.t
            return torch._utils._rebuild_tensor, (t.storage(), t.storage_offset(), tuple(t.size()), t.stride())

    old = tmp_path / "torch03.pth"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TypedStorage's deprecation
        torch.save({k: Torch03Tensor(v) for k, v in state.items()}, old, _use_new_zipfile_serialization=False)
    model = models.mobilenet_v2(weights=old, num_classes=3)
    assert ember.equal(model.classifier[1].weight, src.classifier[1].weight)


def test_torchvision_names_ember_lacks_raise_not_in_ember():
    with pytest.raises(NotInEmberError, match="torchvision.models.densenet121"):
        models.densenet121
    assert not hasattr(models, "vit_b_16")
    with pytest.raises(AttributeError):
        models.no_such_model


def test_weights_transforms_is_torchvisions_preset():
    w = models.EfficientNet_B0_Weights.DEFAULT
    preset = w.transforms()
    assert preset.crop_size == [224] and preset.resize_size == [256]
    assert preset.mean == [0.485, 0.456, 0.406] and preset.std == [0.229, 0.224, 0.225]
    assert "bicubic" in str(preset.interpolation).lower()
    assert models.ResNet50_Weights.IMAGENET1K_V2.transforms().resize_size == [232]
    transforms = pytest.importorskip("ember.vision.transforms")
    if not all(hasattr(transforms, n) for n in ("Resize", "CenterCrop", "PILToTensor", "ConvertImageDtype",
                                                "Normalize")):
        pytest.skip("ember.vision.transforms lacks a step of the preset (merged from the transforms branch)")
    from PIL import Image

    img = Image.fromarray(np.random.RandomState(0).randint(0, 256, (300, 280, 3), dtype=np.uint8))
    out = models.ResNet18_Weights.DEFAULT.transforms()(img)
    assert list(out.shape) == [3, 224, 224] and out.dtype == ember.float32
    if torchvision is not None:
        ref = torchvision.models.ResNet18_Weights.DEFAULT.transforms()(img).numpy()
        np.testing.assert_allclose(out.numpy(), ref, atol=1e-5)  # a PIL image: Pillow resizes both


def test_zz_write_goldens():
    """Writes torchvision's side of every comparison above (run last, with EMBER_WRITE_TORCH_GOLDENS=1)."""
    golden.write()
