"""ember.vision.datasets, as torchvision.datasets: MNIST, FashionMNIST, KMNIST, CIFAR10, CIFAR100,
SVHN, ImageFolder and DatasetFolder with torchvision's signatures, folder layouts and attributes,
read by ember's C++ readers (IDX, CIFAR binary and pickled batches through the restricted
unpickler) and downloaded with `ember data fetch`'s SHA-256 checks."""

from .cifar import CIFAR10, CIFAR100
from .folder import (IMG_EXTENSIONS, DatasetFolder, ImageFolder, default_loader, find_classes,
                     has_file_allowed_extension, is_image_file, make_dataset, pil_loader)
from .mnist import KMNIST, MNIST, FashionMNIST
from .svhn import SVHN
from .vision import StandardTransform, VisionDataset

__all__ = [
    "MNIST", "FashionMNIST", "KMNIST", "CIFAR10", "CIFAR100", "SVHN", "ImageFolder", "DatasetFolder",
    "VisionDataset", "StandardTransform", "IMG_EXTENSIONS", "default_loader", "pil_loader", "find_classes",
    "make_dataset", "has_file_allowed_extension", "is_image_file",
]
