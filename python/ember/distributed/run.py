"""``python -m ember.distributed.run --nproc-per-node N script.py [args]``: torchrun's stand-in on one
machine, the launcher of ``ember train --nproc-per-node`` (include/ember/dist/launch.h): N copies of
the script with torchrun's environment; when one fails the others are stopped and its rank is named."""

from __future__ import annotations

import argparse
import sys

from .. import _core


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                     description="Start N ranks of a script on this machine, as torchrun does.")
    parser.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1, dest="nproc_per_node")
    parser.add_argument("--master-addr", "--master_addr", default="127.0.0.1", dest="master_addr")
    parser.add_argument("--master-port", "--master_port", type=int, default=0, dest="master_port",
                        help="0: a free port")
    parser.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    a = parser.parse_args(argv)
    command = [sys.executable] + (["-m"] if a.module else []) + [a.script] + a.args
    code, _failed_rank, message = _core._dist.launch_local(a.nproc_per_node, command, a.master_addr, a.master_port)
    if message:
        print(f"ember.distributed.run: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
