"""ember.load_run: a trained run as a model to predict with, export, or hand to PyTorch."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from .errors import ShapeError


@dataclass
class Prediction:
    """One input's classes: ``probabilities`` over ``classes``, best first through top()."""

    probabilities: np.ndarray  # (classes,), float32, summing to 1
    classes: Sequence[str]

    @property
    def index(self) -> int:
        return int(np.argmax(self.probabilities))

    @property
    def label(self) -> str:
        return self.classes[self.index]

    def top(self, k: int = 5) -> List[Tuple[str, float]]:
        order = np.argsort(-self.probabilities, kind="stable")[:k]
        return [(self.classes[i], float(self.probabilities[i])) for i in order]


class Model:
    """A trained model (ember.load_run): its classes, its input (C, H, W) and normalisation, predict() and export()."""

    def __init__(self, core: Any) -> None:
        self._m = core

    @property
    def model_name(self) -> str:
        return self._m.model_name

    @property
    def classes(self) -> List[str]:
        return list(self._m.classes)

    @property
    def input_shape(self) -> Tuple[int, int, int]:
        """(C, H, W) of one input."""
        return tuple(self._m.input_shape)

    @property
    def device(self) -> _core.Device:
        return self._m.device

    @property
    def checkpoint(self) -> Path:
        return Path(self._m.checkpoint)

    @property
    def epoch(self) -> int:
        return self._m.epoch

    @property
    def notes(self) -> List[str]:
        return list(self._m.notes)

    def __repr__(self) -> str:
        return (f"ember.Model({self.model_name}, {len(self.classes)} classes, input {self.input_shape}, "
                f"epoch {self.epoch}, on {self.device})")

    def _array_input(self, a: np.ndarray) -> _core.Tensor:
        c, h, w = self.input_shape
        pixels = a.dtype == np.uint8
        if pixels and self._is_picture_of_another_size(a):
            # One picture of another size or channel count: resized and converted as a file or a PIL
            # image is (issue 48, item 17), through the same lossless PNG and the library's reader.
            try:
                from PIL import Image
            except ImportError:
                raise ShapeError(f"predict: the model takes ({c}, {h}, {w}) inputs, got a picture of shape {a.shape}",
                                 "install Pillow (pip install pillow) to have it resized, or resize it to "
                                 f"{h}x{w} yourself") from None
            return self._pil_input(Image.fromarray(a[..., 0] if a.ndim == 3 and a.shape[-1] == 1 else a))
        if pixels:  # (H, W), (H, W, C), (C, H, W) or (N, C, H, W)
            if a.ndim == 2:
                a = a[None, None]
            elif a.ndim == 3:
                a = a.transpose(2, 0, 1)[None] if a.shape[-1] == c and a.shape[0] != c else a[None]
        else:  # model inputs, normalised: (C, H, W) or (N, C, H, W)
            a = np.asarray(a, dtype=np.float32)
            if a.ndim == 3:
                a = a[None]
        if a.ndim != 4 or tuple(a.shape[1:]) != (c, h, w):
            raise ShapeError(f"predict: the model takes ({c}, {h}, {w}) inputs, got an array of shape {a.shape}",
                             "pass uint8 pixels of that size (H, W[, C]) or normalised float32 (N, C, H, W), "
                             "or an image file or PIL image (resized for you)")
        x = _core.from_numpy(np.ascontiguousarray(a))
        # Pixels are normalised by the library, as the test set is (the same bits as `ember predict`).
        return self._m.pixels_input(x) if pixels else x

    def _is_picture_of_another_size(self, a: np.ndarray) -> bool:
        """A single uint8 picture as PIL and NumPy hold one, (H, W) or (H, W, 1|3|4), that is not
        already the model's (C, H, W)."""
        c, h, w = self.input_shape
        if a.ndim == 2:
            return a.shape != (h, w) or c != 1
        if a.ndim == 3 and a.shape[-1] in (1, 3, 4) and a.shape[0] != c:
            return a.shape != (h, w, c)
        return False

    def _file_input(self, path: str, max_pixels: int = -1) -> _core.Tensor:
        """An image file read as `ember predict FILE` reads it; the check against the training data
        warns as it does there."""
        x, notes = self._m.image_input(path, max_pixels)
        for note in notes:
            warnings.warn(note, UserWarning, stacklevel=4)
        return x

    def _pil_input(self, image: Any) -> _core.Tensor:
        """A PIL image saved losslessly and read as `ember predict FILE` reads files."""
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "image.png")
            image.save(path)
            return self._file_input(path, 0)

    def _input(self, x: Union[np.ndarray, str, "os.PathLike[str]", Any]) -> _core.Tensor:
        if isinstance(x, (str, os.PathLike)):
            return self._file_input(os.fspath(x))
        if isinstance(x, np.ndarray):
            return self._array_input(x)
        if hasattr(x, "save") and hasattr(x, "mode"):  # a PIL.Image
            return self._pil_input(x)
        raise TypeError(f"predict: expected an image file, a PIL image or a numpy array, got {type(x).__name__}")

    def logits(self, x: Union[np.ndarray, str, "os.PathLike[str]", Any]) -> np.ndarray:
        """The model's raw outputs (N, classes) for the inputs predict() takes."""
        return np.asarray(self._m.logits(self._input(x)))

    def predict(self, x: Union[np.ndarray, str, "os.PathLike[str]", Any]) -> Union[Prediction, List[Prediction]]:
        """Classes of an image file (read as ``ember predict FILE`` does: decoded, resized to the
        model's input, normalised as in training), a PIL image (the same, through a lossless PNG), or a
        numpy array: uint8 pixels (H, W), (H, W, C), (C, H, W) or (N, C, H, W) at the model's size (one
        picture (H, W) or (H, W, C) of another size is resized as a PIL image is; Pillow needed), or
        float32 inputs already normalised. The forward and the probabilities are the library's, as
        ``ember predict`` computes them (bit for bit). One input gives a Prediction, a batch a list of
        them."""
        probs = np.asarray(self._m.probabilities(self._input(x)))
        preds = [Prediction(p, self.classes) for p in probs]
        batched = isinstance(x, np.ndarray) and x.ndim == 4
        return preds if batched else preds[0]

    def export(self, path: Union[str, "os.PathLike[str]"], format: str = "") -> Path:
        """Write the model as ``ember export`` does: ONNX (opset 17), a PyTorch safetensors state dict, or
        the file ``torch.save(model.state_dict())`` writes (``torch.load(path, weights_only=True)`` reads
        it); the format from ``format`` ("onnx", "safetensors", "torch") or the file's extension
        (.onnx, .safetensors, .pt / .pth)."""
        path = Path(path)
        self._m.export(str(path), format)
        return path

    def state_dict(self) -> Dict[str, _core.Tensor]:
        """The parameters and buffers under PyTorch's names, as ember.Tensors sharing the model's
        memory: ``torch.from_dlpack(t)`` or ``np.asarray(t)`` read them without a copy."""
        return dict(self._m.named_tensors())


def load_run(path: Union[str, "os.PathLike[str]"], checkpoint: str = "", device: Optional[str] = None, model: str = "",
             classes: Union[str, "os.PathLike[str]"] = "") -> Model:
    """A trained model, opened as ``ember eval`` and ``ember predict`` open it: from a run directory
    (its best epoch; checkpoint="last" for the last one), a checkpoint manifest or .safetensors file
    of a run, or a weights file on its own (ember's export; PyTorch's or torchvision's with ``model``,
    the architecture's zoo name, and ``classes``, a file of class names). On ``device``: by default
    ``ember eval``'s and ``ember predict``'s (``"auto"``: the GPU when one is usable, else the CPU,
    saying why), or "cpu", "cuda", "cuda:N". What loading noted (casts, prefixes) is in ``model.notes``."""
    m = Model(_core._load(os.fspath(path), checkpoint, device or "", model, os.fspath(classes) if classes else ""))
    return m
