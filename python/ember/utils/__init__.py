"""ember.utils, as torch.utils: the data-loading package (ember.utils.data)."""

from . import data  # noqa: F401

__all__ = ["data"]
