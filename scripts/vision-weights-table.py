"""Writes python/ember/vision/models/_weights_table.py and _meta.py from torchvision's weights enums
(url, meta, the ImageClassification preset's arguments), so ember's enums carry torchvision's data
without a hand copy. Run with a Python where torchvision imports:
    /work/wt/torchvenv/bin/python scripts/vision-weights-table.py"""

import pprint
from pathlib import Path

import torchvision
from torchvision.models import _meta
import importlib

alexnet, efficientnet, mobilenetv2, mobilenetv3, resnet, vgg = (importlib.import_module(f"torchvision.models.{m}") for m in
    ("alexnet", "efficientnet", "mobilenetv2", "mobilenetv3", "resnet", "vgg"))

ENUMS = [resnet.ResNet18_Weights, resnet.ResNet34_Weights, resnet.ResNet50_Weights, alexnet.AlexNet_Weights,
         vgg.VGG11_Weights, vgg.VGG11_BN_Weights, vgg.VGG16_Weights, vgg.VGG16_BN_Weights,
         mobilenetv2.MobileNet_V2_Weights, mobilenetv3.MobileNet_V3_Small_Weights,
         mobilenetv3.MobileNet_V3_Large_Weights, efficientnet.EfficientNet_B0_Weights]
out = Path(__file__).resolve().parents[1] / "python" / "ember" / "vision" / "models"


def preset(w):
    p = w.transforms
    kw = dict(p.keywords)
    if "interpolation" in kw:
        kw["interpolation"] = kw["interpolation"].value
    return {"preset": p.func.__name__, **kw}


table = {}
for enum in ENUMS:
    members = {}
    for name, member in enum.__members__.items():
        if member.name != name:  # an alias (DEFAULT): recorded by the member it names
            continue
        meta = dict(member.meta)
        if meta.get("categories") == _meta._IMAGENET_CATEGORIES:
            meta["categories"] = "_IMAGENET_CATEGORIES"
        members[name] = {"url": member.url, "transforms": preset(member.value), "meta": meta}
    table[enum.__name__] = {"members": members, "default": enum.DEFAULT.name}

(out / "_weights_table.py").write_text(
    f'"""torchvision {torchvision.__version__}\'s weights enums as data (written by scripts/vision-weights-table.py;\n'
    'do not edit): per enum, each member\'s url, ImageClassification preset and meta, and which member\n'
    'DEFAULT names. "_IMAGENET_CATEGORIES" stands for _meta\'s list."""\n\n'
    'nan = float("nan")  # torchvision\'s metric for weights never measured on ImageNet\n\n'
    f"TABLE = {pprint.pformat(table, width=118, sort_dicts=False)}\n")
(out / "_meta.py").write_text(
    f'"""torchvision {torchvision.__version__}\'s ImageNet-1K category names, in class-index order (written by\n'
    'scripts/vision-weights-table.py; do not edit)."""\n\n'
    f"_IMAGENET_CATEGORIES = {pprint.pformat(list(_meta._IMAGENET_CATEGORIES), width=118, compact=True)}\n")
