"""``ember.distributed``: torch.distributed's API over ember's process group (include/ember/dist/, the one
``ember train --nproc-per-node`` uses): Gloo for CPU tensors, NCCL for CUDA tensors. The ranks are
started by ``torchrun``, ``mpirun`` or ``python -m ember.distributed.run``; ``init_process_group()``
reads their environment. The collectives release the GIL; a peer that dies ends the others with
``PeerFailureError`` (a RuntimeError naming its rank and host), never a hang."""

from __future__ import annotations

import enum
import os
from datetime import timedelta
from urllib.parse import urlparse

from .. import _core
from ..errors import DistError, DistTimeoutError, PeerFailureError

__all__ = [
    "Backend", "ReduceOp", "Work", "is_available", "is_initialized", "init_process_group", "destroy_process_group",
    "get_rank", "get_world_size", "get_backend", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "barrier", "DistError", "DistTimeoutError", "PeerFailureError", "default_pg_timeout",
]

_dist = _core._dist

# PyTorch's default for the CPU backend (torch.distributed.default_pg_timeout).
default_pg_timeout = timedelta(minutes=30)


class Backend(str):
    """The backends' names, as torch.distributed.Backend: ``Backend("GLOO") == "gloo"``."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise TypeError(f"Backend name must be a string, got {type(name).__name__}")
        value = name.lower()
        if value not in ("gloo", "nccl", "mpi", "undefined"):
            raise ValueError(f"unknown process-group backend {name!r}; ember has 'gloo' (CPU tensors) and "
                             "'nccl' (CUDA tensors)")
        return super().__new__(cls, value)


class ReduceOp(enum.Enum):
    """How all_reduce combines the ranks' tensors. ember's process group has SUM and AVG; the others
    of torch.distributed.ReduceOp are named so that using one says so."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


class Work:
    """A pending collective (``async_op=True``): ``wait()`` blocks until it is done (bounded by the
    group's timeout) and raises its error; ``is_completed()`` asks without blocking."""

    def __init__(self, work, then=None) -> None:
        self._work = work
        self._then = then

    def wait(self, timeout: timedelta | None = None) -> bool:
        self._work.wait(None if timeout is None else timeout.total_seconds())
        if self._then is not None:
            then, self._then = self._then, None
            then()
        return True

    def is_completed(self) -> bool:
        return self._work.is_completed()

    def is_success(self) -> bool:
        return self.is_completed()


def is_available() -> bool:
    """Whether this ember build has a process-group backend (Gloo or NCCL)."""
    return bool(_dist.available_backends())


def is_initialized() -> bool:
    """Whether init_process_group() has run (and destroy_process_group() has not)."""
    return _dist.is_initialized()


def _env_int(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not an integer; set it to the rank's number") from None


def _world(init_method: str | None, world_size: int, rank: int) -> dict:
    """Where this process sits: the launcher's environment (env://) or a tcp:// address, with the
    explicit rank/world_size winning as in PyTorch."""
    env = {k: v for k, v in os.environ.items()}
    if init_method is None or init_method == "env://":
        # Explicit arguments override the variables (PyTorch's env:// rendezvous does the same).
        if rank >= 0:
            env["RANK"] = str(rank)
        if world_size >= 0:
            env["WORLD_SIZE"] = str(world_size)
        world = _dist.world_from_env(env)  # torchrun's, Open MPI's or MPICH's variables (dist/env.h)
        if world["source"] == "none":
            missing = "RANK" if "RANK" not in env else "WORLD_SIZE"
            raise ValueError(f"Error initializing ember.distributed using env:// rendezvous: environment variable "
                             f"{missing} expected, but not set (start the ranks with torchrun, mpirun or "
                             "`python -m ember.distributed.run`, or pass rank= and world_size=)")
        return world
    if init_method.startswith("tcp://"):
        url = urlparse(init_method)
        if not url.hostname or not url.port:
            raise ValueError(f"init_method {init_method!r} needs a host and a port: tcp://HOST:PORT")
        if rank < 0 or world_size < 1:
            raise ValueError("init_method tcp:// needs rank= and world_size= (rank 0..world_size-1)")
        if rank >= world_size:
            raise ValueError(f"rank {rank} is out of range for world_size {world_size} (ranks are 0..{world_size - 1})")
        local_rank = _env_int("LOCAL_RANK", env["LOCAL_RANK"]) if "LOCAL_RANK" in env else rank
        return {"rank": rank, "world_size": world_size, "local_rank": local_rank, "master_addr": url.hostname,
                "master_port": url.port, "source": "tcp"}
    raise ValueError(f"init_method {init_method!r} is not supported: use 'env://' (torchrun's variables) or "
                     "'tcp://HOST:PORT'")


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None, device_id=None) -> None:
    """Joins the job's other ranks (blocking until all arrive or the timeout ends). ``backend``:
    None (Gloo; NCCL for ``device_id`` a CUDA device), "gloo" or "nccl"."""
    if _dist.is_initialized():
        raise _core_value_error("trying to initialize the default process group twice!")
    if store is not None:
        raise ValueError("init_process_group(store=...) is not supported by ember; use init_method")
    if timeout is None:
        timeout = default_pg_timeout
    if not isinstance(timeout, timedelta):
        raise TypeError(f"timeout must be a datetime.timedelta, got {type(timeout).__name__}")
    if timeout.total_seconds() <= 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    if backend is None:
        name = "nccl" if device_id is not None and "cuda" in str(device_id) else "gloo"
    else:
        name = str(backend).lower()
        if ":" in name or "," in name:  # PyTorch's "cpu:gloo,cuda:nccl": the device's backend
            name = "gloo"
        if name not in ("gloo", "nccl"):
            raise ValueError(f"process-group backend {backend!r} is not available in ember; use 'gloo' (CPU tensors) "
                             "or 'nccl' (CUDA tensors)")
    world = _world(init_method, world_size, rank)
    _dist.init(name, world["rank"], world["world_size"], world["master_addr"], world["master_port"],
               world["local_rank"], timeout.total_seconds())


def _core_value_error(message: str):
    from ..errors import ValueError as EmberValueError  # a ValueError and a RuntimeError at once
    return EmberValueError(message)


def destroy_process_group(group=None) -> None:
    """Leaves the job: the group's connections close; init_process_group may be called again."""
    _check_group(group)
    _dist.destroy()


def _check_group(group) -> None:
    if group is not None and group is not _WORLD:
        raise ValueError("ember.distributed has only the default group (group=None or group.WORLD)")


class _World:
    def __repr__(self) -> str:
        return "<ember.distributed group.WORLD>"


_WORLD = _World()


class group:  # noqa: N801 - torch.distributed.group
    WORLD = _WORLD


def get_rank(group=None) -> int:
    _check_group(group)
    return _dist.rank()


def get_world_size(group=None) -> int:
    _check_group(group)
    return _dist.world_size()


def get_backend(group=None) -> str:
    _check_group(group)
    return Backend(_dist.backend())


def _finish(work, async_op: bool, then=None):
    w = Work(work, then)
    if async_op:
        return w
    w.wait()
    return None


def _op_name(op) -> str:
    if isinstance(op, str):
        op = ReduceOp[op.upper()]
    if not isinstance(op, ReduceOp):
        raise TypeError(f"op must be an ember.distributed.ReduceOp, got {type(op).__name__}")
    if op not in (ReduceOp.SUM, ReduceOp.AVG):
        raise ValueError(f"ReduceOp.{op.name} is not supported by ember's process group; use ReduceOp.SUM or "
                         "ReduceOp.AVG")
    return op.value


def _check_tensor(tensor, what: str) -> None:
    if not isinstance(tensor, _core.Tensor):
        raise TypeError(f"{what} must be an ember.Tensor, got {type(tensor).__name__}")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """In place: ``tensor`` becomes the sum (or mean) of every rank's ``tensor`` (float32)."""
    _check_group(group)
    _check_tensor(tensor, "all_reduce's tensor")
    return _finish(_dist.all_reduce(tensor, _op_name(op)), async_op)


def broadcast(tensor, src: int = 0, group=None, async_op: bool = False):
    """In place: ``tensor`` takes rank ``src``'s values on every rank (any dtype)."""
    _check_group(group)
    _check_tensor(tensor, "broadcast's tensor")
    return _finish(_dist.broadcast(tensor, int(src)), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """``output_tensor`` (world_size * input's numel elements, contiguous: shape (world_size, *shape)
    or (world_size * shape[0], *shape[1:])) gets every rank's ``input_tensor`` in rank order."""
    _check_group(group)
    _check_tensor(output_tensor, "all_gather_into_tensor's output")
    _check_tensor(input_tensor, "all_gather_into_tensor's input")
    return _finish(_dist.all_gather(input_tensor, output_tensor), async_op)


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """``tensor_list[r]`` (one tensor of ``tensor``'s shape per rank) gets rank r's ``tensor``."""
    _check_group(group)
    _check_tensor(tensor, "all_gather's tensor")
    world = _dist.world_size()
    if len(tensor_list) != world:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors; it needs one per rank "
                         f"(world size {world})")
    for t in tensor_list:
        _check_tensor(t, "all_gather's tensor_list element")
    src = tensor.contiguous()
    out = _core.empty((world, *tensor.shape), dtype=tensor.dtype, device=tensor.device)

    def copy_out():
        with _core_no_grad():
            for r, t in enumerate(tensor_list):
                t.copy_(out[r])

    return _finish(_dist.all_gather(src, out), async_op, copy_out)


def _core_no_grad():
    from ..autograd import no_grad
    return no_grad()


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Returns when every rank has called barrier()."""
    _check_group(group)
    return _finish(_dist.barrier(), async_op)
