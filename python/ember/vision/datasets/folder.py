"""DatasetFolder and ImageFolder with torchvision's rules (torchvision/datasets/folder.py): sorted
class folders, a sorted walk that follows links, IMG_EXTENSIONS, is_valid_file and allow_empty,
and the PIL loader. The listing stays in Python because torchvision's hooks are Python callables
(is_valid_file, an overridden find_classes / make_dataset); an unreadable image raises the error
PIL raises (OSError / UnidentifiedImageError), its message naming the file."""

import os

from PIL import Image

from .vision import VisionDataset

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename, extensions):
    """True when filename ends with one of extensions (lowercase), case-insensitively."""
    return filename.lower().endswith(extensions if isinstance(extensions, str) else tuple(extensions))


def is_image_file(filename):
    """True when filename has one of IMG_EXTENSIONS."""
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory):
    """The class folders of directory, sorted, and their indices. FileNotFoundError when none."""
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    class_to_idx = {cls_name: i for i, cls_name in enumerate(classes)}
    return classes, class_to_idx


def make_dataset(directory, class_to_idx=None, extensions=None, is_valid_file=None, allow_empty=False):
    """[(path, class index)] of the valid files under each class folder, in torchvision's order."""
    directory = os.path.expanduser(directory)
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    both_none = extensions is None and is_valid_file is None
    both_something = extensions is not None and is_valid_file is not None
    if both_none or both_something:
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
    if extensions is not None:
        def is_valid_file(x):
            return has_file_allowed_extension(x, extensions)

    instances = []
    available_classes = set()
    for target_class in sorted(class_to_idx.keys()):
        class_index = class_to_idx[target_class]
        target_dir = os.path.join(directory, target_class)
        if not os.path.isdir(target_dir):
            continue
        for root, _, fnames in sorted(os.walk(target_dir, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if is_valid_file(path):
                    instances.append((path, class_index))
                    available_classes.add(target_class)

    empty_classes = set(class_to_idx.keys()) - available_classes
    if empty_classes and not allow_empty:
        msg = f"Found no valid file for the classes {', '.join(sorted(empty_classes))}. "
        if extensions is not None:
            msg += f"Supported extensions are: {extensions if isinstance(extensions, str) else ', '.join(extensions)}"
        raise FileNotFoundError(msg)
    return instances


class DatasetFolder(VisionDataset):
    """A generic dataset of root/<class>/<...>/<file>, as torchvision's: ``classes`` (sorted),
    ``class_to_idx``, ``samples`` [(path, class index)], ``targets``; ``loader(path)`` reads a
    sample. Override ``find_classes`` / ``make_dataset`` for another layout."""

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None, is_valid_file=None,
                 allow_empty=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(self.root, class_to_idx=class_to_idx, extensions=extensions,
                                    is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.loader = loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [s[1] for s in samples]

    @staticmethod
    def make_dataset(directory, class_to_idx, extensions=None, is_valid_file=None, allow_empty=False):
        if class_to_idx is None:
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(directory, class_to_idx, extensions=extensions, is_valid_file=is_valid_file,
                            allow_empty=allow_empty)

    def find_classes(self, directory):
        return find_classes(directory)

    def __getitem__(self, index):
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target

    def __len__(self):
        return len(self.samples)


def pil_loader(path):
    """The image at path as an RGB PIL image (torchvision's pil_loader). A file PIL cannot read
    raises what PIL raises (UnidentifiedImageError, OSError "image file is truncated"), with the
    path in the message."""
    try:
        with open(path, "rb") as f:
            img = Image.open(f)
            return img.convert("RGB")
    except OSError as e:
        if os.fspath(path) in str(e):
            raise
        try:
            named = type(e)(f"{os.fspath(path)}: {e}")
        except Exception:  # an OSError subclass with another constructor: keep PIL's own
            raise e from None
        raise named from e


def default_loader(path):
    """pil_loader (ember has no accimage backend)."""
    return pil_loader(path)


class ImageFolder(DatasetFolder):
    """root/<class>/<...>/<image> with torchvision's rules: files with IMG_EXTENSIONS (or those
    is_valid_file accepts), read by ``loader`` (default: PIL, converted to RGB). ``imgs`` is
    ``samples``."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader, is_valid_file=None,
                 allow_empty=False):
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform=transform,
                         target_transform=target_transform, is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples
