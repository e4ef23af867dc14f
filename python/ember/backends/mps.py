"""``ember.backends.mps``, as ``torch.backends.mps``: Apple's Metal devices, which ember has no
backend for — ``is_available()`` and ``is_built()`` are False everywhere."""

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
