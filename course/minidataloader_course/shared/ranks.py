"""Real ranks on one machine: ``torch.distributed`` with the gloo backend over loopback,
started with ``torch.multiprocessing.spawn``. Chapter 12 teaches it (its experiments are
jobs in ``chapters/ch12/distributed.py``); milestone 13 runs the learner's loader on two
ranks with it.

Spawned ranks are fresh Python processes: they find the function they run by importing it,
so a job lives in a module, never in a notebook.

    spawn_ranks(jobs) ──► run_rank(rank 0) ─┐  each rank runs every job on its own share,
                      ──► run_rank(rank 1) ─┘  then all_gather_object sends each result
                                               to everyone; rank 0 writes them to a file
                                               that spawn_ranks reads back.

A job is ``(name, function, keyword arguments)``; the function runs in every rank and
returns something JSON can hold.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

RESULTS_FILE = "results.json"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_rank(rank: int, world_size: int, port: int, folder: str, jobs: list) -> None:
    """What every rank runs: join the process group, run each job, gather the results."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"  # loopback: the ranks never leave this machine
    os.environ["MASTER_PORT"] = str(port)
    if sys.platform.startswith("linux"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # gloo's sockets on loopback too
    torch.set_num_threads(1)  # the ranks share this machine's cores
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        results = {}
        for name, job, kwargs in jobs:
            mine = job(**kwargs)
            everyone = [None] * world_size
            dist.all_gather_object(everyone, mine)  # everyone[r] is rank r's result
            results[name] = everyone
        if rank == 0:
            (pathlib.Path(folder) / RESULTS_FILE).write_text(json.dumps(results))
    finally:
        dist.destroy_process_group()


def spawn_ranks(jobs: list, world_size: int = 2, timeout: float = 120.0,
                start_method: str = "spawn") -> dict:
    """Start ``world_size`` ranks with ``torch.multiprocessing.spawn``, run ``jobs`` in each,
    and return ``{job name: [result of rank 0, result of rank 1, ...]}``. (``start_method=
    "fork"``: ranks forked from this process, which start in milliseconds instead of
    importing torch again; only where fork exists, and before this process joins a group.)

    If a rank fails, the others are stopped and its exception is raised here. If the ranks
    have not finished after ``timeout`` seconds, they are killed and TimeoutError raised."""
    with tempfile.TemporaryDirectory() as folder:
        context = mp.start_processes(run_rank, args=(world_size, free_port(), folder, jobs),
                                     nprocs=world_size, join=False, start_method=start_method)
        deadline = time.monotonic() + timeout
        while not context.join(timeout=0.2):  # True once every rank has exited cleanly
            if time.monotonic() > deadline:
                for process in context.processes:
                    process.kill()
                    process.join(5)
                raise TimeoutError(f"the {world_size} ranks had not finished after {timeout} s "
                                   "(a rank waiting for another in a collective call hangs "
                                   "forever): they were killed")
        return json.loads((pathlib.Path(folder) / RESULTS_FILE).read_text())
