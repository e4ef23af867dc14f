"""ember.distributed and ember.nn.parallel.DistributedDataParallel: ranks are separate processes
started here as torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK set),
over the Gloo backend on CPU tensors. Each rank runs a small script and prints one JSON line."""

import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time

import pytest

import ember
import ember.distributed as dist
from ember.nn.parallel import DistributedDataParallel

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="this ember build has no process-group backend")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(tmp_path, body: str, nproc: int = 2, timeout: float = 14.0, env_extra=None):
    """Runs `body` in nproc processes with torchrun's environment; returns [(returncode, stdout,
    stderr)] per rank. The body sees `dist`, `ember`, `json`, `RANK` and `report(obj)`."""
    script = tmp_path / "rank_main.py"
    script.write_text(textwrap.dedent("""
        import json, os, sys, time, datetime
        import ember
        import ember.distributed as dist
        RANK = int(os.environ["RANK"])
        def report(obj):
            print("RESULT " + json.dumps(obj), flush=True)
    """) + textwrap.dedent(body))
    port = free_port()
    procs = []
    for r in range(nproc):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(nproc), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(nproc),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1", EMBER_NUM_THREADS="1")
        env.update(env_extra or {})
        procs.append(subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    out = []
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            o, e = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise AssertionError(f"a rank did not finish within {timeout} s (a hang)")
        out.append((p.returncode, o, e))
    return out


def results(runs):
    got = []
    for rank, (code, o, e) in enumerate(runs):
        assert code == 0, f"rank {rank} exited {code}:\n{e}"
        lines = [ln for ln in o.splitlines() if ln.startswith("RESULT ")]
        assert lines, f"rank {rank} printed no result:\n{o}\n{e}"
        got.append(json.loads(lines[-1][len("RESULT "):]))
    return got


def test_collectives_two_ranks(tmp_path):
    runs = spawn(tmp_path, """
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
        out = {"rank": dist.get_rank(), "world": dist.get_world_size(), "backend": str(dist.get_backend()),
               "init": dist.is_initialized()}
        t = ember.tensor([1.0, 2.0, 3.0]) * (RANK + 1)
        dist.all_reduce(t)
        out["sum"] = t.tolist()
        t = ember.tensor([2.0, 4.0]) * (RANK + 1)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        out["avg"] = t.tolist()
        t = ember.tensor([float(RANK)] * 3)
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        out["async"] = t.tolist()
        b = ember.tensor([10 * (RANK + 1), 7], dtype=ember.int64)
        dist.broadcast(b, src=1)
        out["broadcast"] = b.tolist()
        gathered = [ember.zeros(2) for _ in range(2)]
        dist.all_gather(gathered, ember.tensor([RANK, RANK + 0.5]))
        out["gather"] = [g.tolist() for g in gathered]
        flat = ember.zeros(4)
        dist.all_gather_into_tensor(flat, ember.tensor([RANK, -RANK], dtype=ember.float32))
        out["gather_into"] = flat.tolist()
        dist.barrier()
        try:
            dist.all_reduce(ember.tensor([1, 2]))
        except TypeError as e:
            out["int_error"] = str(e)
        try:
            dist.init_process_group("gloo")
        except RuntimeError as e:
            out["twice"] = str(e)
        dist.destroy_process_group()
        out["after_destroy"] = dist.is_initialized()
        report(out)
    """)
    for rank, r in enumerate(results(runs)):
        assert r["rank"] == rank and r["world"] == 2 and r["backend"] == "gloo" and r["init"]
        assert r["sum"] == [3.0, 6.0, 9.0]
        assert r["avg"] == [3.0, 6.0]
        assert r["async"] == [1.0, 1.0, 1.0]
        assert r["broadcast"] == [20, 7]
        assert r["gather"] == [[0.0, 0.5], [1.0, 1.5]]
        assert r["gather_into"] == [0.0, 0.0, 1.0, -1.0]
        assert "float32" in r["int_error"]
        assert "twice" in r["twice"]
        assert r["after_destroy"] is False


DDP_MODEL = """
    def make_model():
        return ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Tanh(), ember.nn.Linear(8, 2))
    def data():
        ember.manual_seed(123)
        return ember.randn(8, 4), ember.randn(8, 2)
"""


def test_ddp_training_matches_single_process(tmp_path):
    runs = spawn(tmp_path, textwrap.dedent(DDP_MODEL) + textwrap.dedent("""
        from ember.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
        ember.manual_seed(100 + RANK)          # different starts: DDP must copy rank 0's weights
        ddp = DDP(make_model(), bucket_cap_mb=0.0001)   # tiny buckets: several all-reduces per step
        opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
        x, y = data()
        xs, ys = x[RANK::2], y[RANK::2]       # the DistributedSampler split, by hand
        for _ in range(3):
            opt.zero_grad()
            ember.nn.functional.mse_loss(ddp(xs), ys).backward()
            opt.step()
        # no_sync: the gradient stays this rank's own
        opt.zero_grad()
        with ddp.no_sync():
            ember.nn.functional.mse_loss(ddp(xs), ys).backward()
        local = ddp.module[0].bias.grad.tolist()
        state = {k: v.tolist() for k, v in ddp.state_dict().items()}
        # ... and the next synchronised backward averages the accumulated sums
        ember.nn.functional.mse_loss(ddp(xs), ys).backward()
        report({"state": state, "local_grad": local, "buckets": len(ddp.reducer.buckets),
                "accumulated": ddp.module[0].bias.grad.tolist()})
        dist.destroy_process_group()
    """))
    got = results(runs)
    assert got[0]["state"] == got[1]["state"]  # the same weights on both ranks, bit for bit
    assert list(got[0]["state"]) == ["module.0.weight", "module.0.bias", "module.2.weight", "module.2.bias"]
    assert got[0]["local_grad"] != got[1]["local_grad"]
    assert got[0]["buckets"] > 1

    # One process on the full batch from rank 0's start.
    ns = {"ember": ember}
    exec(textwrap.dedent(DDP_MODEL), ns)
    ember.manual_seed(100)
    model = ns["make_model"]()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    x, y = ns["data"]()
    for _ in range(3):
        opt.zero_grad()
        ember.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    opt.zero_grad()
    for _ in range(2):
        ember.nn.functional.mse_loss(model(x), y).backward()
    assert got[0]["accumulated"] == got[1]["accumulated"]
    assert ember.allclose(ember.tensor(got[0]["accumulated"]), model[0].bias.grad, atol=1e-5)
    for k, v in model.state_dict().items():
        want = ember.tensor(v.tolist())
        have = ember.tensor(got[0]["state"]["module." + k])
        assert ember.allclose(have, want, atol=1e-5), k


def test_killed_rank_is_named_not_a_hang(tmp_path):
    start = time.monotonic()
    runs = spawn(tmp_path, """
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=8))
        t = ember.ones(1000)
        dist.all_reduce(t)
        if RANK == 1:
            os._exit(3)   # dies mid-run, without a goodbye
        try:
            for _ in range(1000):
                dist.all_reduce(t)
                time.sleep(0.01)
            report({"error": None})
        except RuntimeError as e:
            report({"error": str(e), "type": type(e).__name__, "rank": getattr(e, "rank", None),
                    "host": getattr(e, "host", None), "peer": isinstance(e, dist.PeerFailureError)})
    """)
    assert time.monotonic() - start < 14
    assert runs[1][0] == 3
    code, o, e = runs[0]
    r = results([runs[0]])[0]
    assert r["error"] is not None and r["peer"], r
    assert "rank 1" in r["error"] and r["rank"] == 1 and r["host"], r


def test_ddp_backward_fails_naming_dead_rank(tmp_path):
    runs = spawn(tmp_path, textwrap.dedent(DDP_MODEL) + textwrap.dedent("""
        from ember.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=8))
        ddp = DDP(make_model())
        if RANK == 1:
            os._exit(5)
        x, y = data()
        try:
            for _ in range(100):
                ember.nn.functional.mse_loss(ddp(x), y).backward()
                time.sleep(0.02)
            report({"error": None})
        except dist.PeerFailureError as e:
            report({"error": str(e), "rank": e.rank})
    """))
    r = results([runs[0]])[0]
    assert r["rank"] == 1 and "rank 1" in r["error"]


def test_stopped_rank_times_out_instead_of_hanging(tmp_path):
    start = time.monotonic()
    runs = spawn(tmp_path, """
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
        t = ember.ones(4)
        dist.all_reduce(t)
        if RANK == 1:
            time.sleep(6)   # alive but stuck past the timeout and the ~2 s the survivor asks the store who died
            os._exit(0)
        try:
            dist.all_reduce(t)
            report({"error": None})
        except dist.DistTimeoutError as e:
            report({"error": str(e), "timeout": isinstance(e, TimeoutError) and isinstance(e, RuntimeError)})
    """)
    r = results([runs[0]])[0]
    assert r["error"] and r["timeout"], r
    assert time.monotonic() - start < 14


@pytest.mark.parametrize("env, variable", [
    ({"RANK": "abc", "WORLD_SIZE": "2"}, "RANK"),
    ({"RANK": "2", "WORLD_SIZE": "2"}, "WORLD_SIZE"),
    ({"RANK": "0", "WORLD_SIZE": "x"}, "WORLD_SIZE"),
    ({"RANK": "0"}, "WORLD_SIZE"),
    ({}, "RANK"),
])
def test_bad_environment_is_a_value_error_naming_the_variable(monkeypatch, env, variable):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                 "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"):
        monkeypatch.delenv(name, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    with pytest.raises(ValueError, match=variable):
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
    assert not dist.is_initialized()


def test_unavailable_backend_and_uninitialised_group():
    with pytest.raises(ValueError, match="gloo"):
        dist.init_process_group("mpi", init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    with pytest.raises(ValueError, match="init_process_group"):
        dist.get_rank()
    with pytest.raises(ValueError, match="AVG"):
        dist.all_reduce(ember.ones(1), op=dist.ReduceOp.MAX)


def test_single_process_world_by_tcp_init(tmp_path):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=5))
    try:
        t = ember.tensor([1.5, 2.5])
        dist.all_reduce(t)
        assert t.tolist() == [1.5, 2.5]
        with pytest.raises(RuntimeError, match="twice"):
            dist.init_process_group("gloo")
        ddp = DistributedDataParallel(ember.nn.Linear(3, 1))
        assert list(ddp.state_dict()) == ["module.weight", "module.bias"]
        assert isinstance(ddp.module, ember.nn.Linear)
    finally:
        dist.destroy_process_group()


def test_run_launcher_starts_ranks(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
        import ember, ember.distributed as dist
        dist.init_process_group("gloo")
        t = ember.ones(2) * (dist.get_rank() + 1)
        dist.all_reduce(t)
        import sys
        sys.stdout.write(f"RESULT {dist.get_rank()} {t.tolist()}\\n")  # one write: the ranks share stdout
        sys.stdout.flush()
        dist.destroy_process_group()
    """))
    p = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2", str(script)],
                       capture_output=True, text=True, timeout=14)
    assert p.returncode == 0, p.stderr
    assert sorted(ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")) == \
        ["RESULT 0 [3.0, 3.0]", "RESULT 1 [3.0, 3.0]"]


def test_under_torchrun(tmp_path):
    # torchrun beside this Python (torch in the test venv), else on PATH, else EMBER_TORCHRUN (e.g.
    # /work/wt/torchvenv/bin/torchrun: its ranks run this Python through --no-python).
    beside = os.path.join(os.path.dirname(sys.executable), "torchrun")
    torchrun = beside if os.access(beside, os.X_OK) else shutil.which("torchrun") or os.environ.get("EMBER_TORCHRUN")
    if not torchrun:
        pytest.skip("torchrun is not installed in this environment")
    script = tmp_path / "job.py"
    script.write_text("import ember, ember.distributed as dist\ndist.init_process_group()\n"
                      "t = ember.ones(1) * dist.get_rank()\ndist.all_reduce(t)\n"
                      "import sys; sys.stdout.write(f'RESULT {t.tolist()}\\n'); sys.stdout.flush()\n")
    # --no-python: the ranks run this Python (which has ember), whatever Python torchrun's own is.
    p = subprocess.run([torchrun, "--nproc-per-node", "2", f"--master-port={free_port()}", "--no-python",
                        sys.executable, str(script)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("RESULT [1.0]") == 2


def test_reachable_as_in_pytorch():
    # torch.distributed and torch.nn.parallel come with `import torch`
    code = ("import ember; assert ember.distributed.is_available() in (True, False); "
            "assert ember.nn.parallel.DistributedDataParallel.__name__ == 'DistributedDataParallel'; "
            "assert 'distributed' in ember.__all__")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=14)


def test_failed_backward_stops_the_module_instead_of_mismatching_collectives():
    class Boom(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ArithmeticError("boom in backward")

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        ddp = DistributedDataParallel(ember.nn.Linear(3, 1))
        x = ember.ones(2, 3, requires_grad=True)
        with pytest.raises(ArithmeticError, match="boom"):
            (Boom.apply(ddp(x)) + ddp.module.weight.sum()).sum().backward()
        with pytest.raises(dist.DistError, match="out of step"):
            ddp(x)
    finally:
        dist.destroy_process_group()


def test_ddp_broadcasts_buffers_at_construction_and_each_forward(tmp_path):
    runs = spawn(tmp_path, """
        from ember.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
        def net():
            bn = ember.nn.BatchNorm1d(3)
            with ember.no_grad():
                bn.running_mean.fill_(float(RANK + 1))
            return ember.nn.Sequential(ember.nn.Linear(3, 3), bn).eval()
        synced, unsynced = DDP(net()), DDP(net(), broadcast_buffers=False)
        out = {"at_start": synced.module[1].running_mean.tolist()}
        with ember.no_grad():
            for m in (synced, unsynced):
                m.module[1].running_mean.fill_(10.0 * (RANK + 1))   # the ranks' buffers drift apart
                m(ember.ones(2, 3))
        out["synced"] = synced.module[1].running_mean.tolist()
        out["unsynced"] = unsynced.module[1].running_mean.tolist()
        report(out)
        dist.destroy_process_group()
    """)
    got = results(runs)
    for rank, r in enumerate(got):
        assert r["at_start"] == [1.0, 1.0, 1.0]
        assert r["synced"] == [10.0, 10.0, 10.0]
        assert r["unsynced"] == [10.0 * (rank + 1)] * 3
