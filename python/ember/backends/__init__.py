"""``ember.backends``, as ``torch.backends``: cuDNN's version and switches (``cudnn``), and Apple's
MPS (``mps``), which ember does not have."""

from . import cudnn, mps

__all__ = ["cudnn", "mps"]
