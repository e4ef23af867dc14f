"""``ember.nn``: torch.nn on ember (``import ember.nn as nn``). ``Module`` is PyTorch's object model in
Python; the layers call ``ember.nn.functional`` (C++ ops); ``init`` and ``utils`` are PyTorch's.
A torch.nn name ember lacks raises NotImplementedError naming it."""

from . import functional, init, utils
from .modules import *  # noqa: F401,F403
from . import modules as _modules
from .modules.module import Module
from .parameter import Buffer, Parameter
from . import parallel  # DistributedDataParallel
from ..errors import NotInEmberError as _NotInEmber

__all__ = ["Parameter", "Buffer", "Module", "functional", "init", "utils", "parallel"] + sorted(
    n for n, v in vars(_modules).items() if isinstance(v, type) and not n.startswith("_") and n != "Module")

# torch.nn's public names in PyTorch 2.15 that ember lacks: each raises NotImplementedError naming it.
_TORCH_ONLY = frozenset([
    "AdaptiveAvgPool3d", "AdaptiveLogSoftmaxWithLoss", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
    "AlphaDropout", "AvgPool3d", "BatchNorm3d", "Bilinear", "CTCLoss", "ChannelShuffle", "CircularPad1d",
    "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "Container", "Conv3d",
    "ConvTranspose3d", "CosineEmbeddingLoss", "CosineSimilarity", "CrossMapLRN2d", "DataParallel", "EmbeddingBag",
    "FeatureAlphaDropout", "Fold", "FractionalMaxPool2d", "FractionalMaxPool3d", "GRU", "GRUCell", "GaussianNLLLoss",
    "Hardshrink", "HingeEmbeddingLoss", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LPPool1d", "LPPool2d",
    "LPPool3d", "LSTM", "LSTMCell", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d",
    "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
    "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear", "LinearCrossEntropyLoss",
    "LocalResponseNorm", "MarginRankingLoss", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
    "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "MultiheadAttention", "NLLLoss2d", "PReLU",
    "PairwiseDistance", "PixelShuffle", "PixelUnshuffle", "PoissonNLLLoss", "RMSNorm", "RNN", "RNNBase", "RNNCell",
    "RNNCellBase", "RReLU", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "Softmax2d", "Softshrink", "SoftMarginLoss", "SyncBatchNorm", "Tanhshrink",
    "Threshold", "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerEncoderLayer", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "Unfold", "UninitializedBuffer",
    "UninitializedParameter", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "attention", "quantized", "qat",
    "quantizable", "intrinsic",
])


def __getattr__(name: str):
    if name in _TORCH_ONLY:
        raise _NotInEmber(f"torch.nn.{name} is not implemented in ember yet; ember.nn.__all__ lists the layers "
                              "ember has (docs/python.md)")
    raise AttributeError(f"module 'ember.nn' has no attribute '{name}'")
