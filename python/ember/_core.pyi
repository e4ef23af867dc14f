"""
ember's C++ library from Python (the extension module behind `import ember`).
"""

from ember._core import cuda as cuda


class Device:
    """A device: ember.Device("cpu"), ember.Device("cuda:1")."""

    def __init__(self, spec: str) -> None:
        """Parses "cpu", "cuda" or "cuda:N" (ember.ValueError otherwise)."""

    @property
    def type(self) -> str:
        """"cpu" or "cuda"."""

    @property
    def index(self) -> int:
        """The device's index (0 for the CPU)."""

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

    def __eq__(self, arg: Device, /) -> bool: ...

    def __hash__(self) -> int: ...

class Tensor:
    """
    A strided view of ember memory on one device. np.asarray(t) and torch.from_dlpack(t) share its data without copying; the data lives while any view of it does.
    """

    @property
    def shape(self) -> tuple:
        """The sizes, a tuple."""

    @property
    def strides(self) -> tuple:
        """The strides in elements (as PyTorch's stride()), a tuple."""

    @property
    def dtype(self) -> str:
        """
        "float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8" or "bool".
        """

    @property
    def device(self) -> Device:
        """Where the data is."""

    @property
    def ndim(self) -> int: ...

    @property
    def data_ptr(self) -> int:
        """The address of the first element (as PyTorch's data_ptr())."""

    def numel(self) -> int: ...

    def is_contiguous(self) -> bool: ...

    def __len__(self) -> int: ...

    def cpu(self) -> Tensor:
        """A copy on the CPU (the tensor itself when it is there)."""

    def to(self, device_or_dtype: str) -> Tensor:
        """A copy on another device ("cuda:0") or in another dtype ("float32")."""

    def numpy(self) -> object:
        """np.asarray(t): a NumPy array sharing the data (CPU tensors)."""

    @property
    def __array_interface__(self) -> dict: ...

    def __dlpack__(self, **kwargs) -> object:
        """A DLPack capsule sharing the data (torch.from_dlpack(t) calls it)."""

    def __dlpack_device__(self) -> tuple: ...

    def __repr__(self) -> str: ...

def from_numpy(array: object) -> Tensor:
    """
    An ember.Tensor sharing a NumPy array's data (no copy); the array lives as long as the tensor.
    """

def from_dlpack(x: object) -> Tensor:
    """
    An ember.Tensor sharing the data of any DLPack producer (a PyTorch tensor, a NumPy array, a capsule), on its device, with its dtype and strides; the source lives as long as the tensor.
    """
