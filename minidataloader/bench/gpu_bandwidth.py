"""Measure, on your own CUDA GPU, what chapter 9 of the book can only model without one:

    python -m minidataloader.bench.gpu_bandwidth [--mib 256] [--repeats 10] [--device cuda:0]

1. the bandwidth of host-to-device copies from pageable and from pinned (page-locked) memory;
2. how long the CPU is held by ``.copy_(..., non_blocking=True)``: from pinned memory the call
   returns before the copy is done, from pageable memory it does not;
3. whether a copy overlaps with computation on the GPU (the copy on a second CUDA stream);
4. pinning a tensor just to copy it once, ``t.pin_memory().to(device, non_blocking=True)``,
   against a plain ``t.to(device)``.

GPU times come from CUDA events, CPU times from ``time.perf_counter``; each figure is the
median of ``--repeats`` runs after a warm-up. Sizes are in MiB (2**20 bytes), bandwidths in
GB/s (10**9 bytes per second), as GPU data sheets give them. Without CUDA the script says so
and exits with status 1.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import torch

MIB = 2**20
NO_CUDA_STATUS = 1


def no_cuda_reason() -> str | None:
    """Why this machine cannot run the measurement, or None if it can."""
    if torch.cuda.is_available():
        return None
    if torch.version.cuda is None:
        why = f"this torch ({torch.__version__}) was built without CUDA"
    else:
        why = (f"this torch ({torch.__version__}, built for CUDA {torch.version.cuda}) finds "
               "no CUDA device")
    return (f"No CUDA GPU here: {why}. This script measures copies from host memory to an "
            "NVIDIA GPU, so there is nothing to measure on this machine. Run it on a machine "
            "with a GPU and a CUDA build of torch:\n"
            "    python -m minidataloader.bench.gpu_bandwidth")


def gbps(nbytes: int, ms: float) -> float:
    """Bandwidth in GB/s (10**9 bytes per second) of ``nbytes`` moved in ``ms`` milliseconds."""
    return nbytes / (ms / 1e3) / 1e9


def overlap_fraction(copy_ms: float, compute_ms: float, together_ms: float) -> float:
    """How much of the shorter activity was hidden under the longer one: 1.0 when copy and
    compute together take only as long as the longer alone, 0.0 when they add up."""
    shorter = min(copy_ms, compute_ms)
    if shorter <= 0:
        return 0.0
    hidden = copy_ms + compute_ms - together_ms
    return min(max(hidden / shorter, 0.0), 1.0)


# --------------------------------------------------------------------------- measuring

def _median_gpu_ms(work, repeats: int) -> float:
    """Median GPU time of ``work()`` between two CUDA events on the current stream."""
    times = []
    for _ in range(repeats + 1):  # the first run warms up (allocator, driver)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times[1:])


def _median_wall_ms(work, repeats: int, device) -> tuple[float, float]:
    """Median CPU time of the call ``work()`` itself, and median time until the GPU is done,
    both by the CPU's clock (the GPU is idle at the start of each run)."""
    calls, totals = [], []
    for _ in range(repeats + 1):
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        work()
        returned = time.perf_counter()
        torch.cuda.synchronize(device)
        done = time.perf_counter()
        calls.append((returned - start) * 1e3)
        totals.append((done - start) * 1e3)
    return statistics.median(calls[1:]), statistics.median(totals[1:])


def measure(mib: int = 256, repeats: int = 10, device: str = "cuda") -> dict:
    """Run the four measurements on ``device``; returns plain numbers (see format_report)."""
    device = torch.device(device)
    if device.index is None:  # "cuda": the current device
        device = torch.device("cuda", torch.cuda.current_device())
    torch.cuda.set_device(device)
    nbytes = mib * MIB
    pageable = torch.empty(nbytes, dtype=torch.uint8).fill_(7)  # every page touched
    pinned = pageable.pin_memory()
    target = torch.empty(nbytes, dtype=torch.uint8, device=device)
    results = {"device": torch.cuda.get_device_name(device), "device_index": device.index,
               "torch": torch.__version__, "cuda": torch.version.cuda, "mib": mib,
               "bytes": nbytes, "repeats": repeats}

    # 1. bandwidth, by CUDA events around the copy
    copy_ms = {
        "pageable": _median_gpu_ms(lambda: target.copy_(pageable), repeats),
        "pinned": _median_gpu_ms(lambda: target.copy_(pinned), repeats),
        "pinned, non_blocking": _median_gpu_ms(
            lambda: target.copy_(pinned, non_blocking=True), repeats),
    }
    results["copy_ms"] = copy_ms
    results["gbps"] = {name: gbps(nbytes, ms) for name, ms in copy_ms.items()}

    # 2. how long the call holds the CPU
    results["call_ms"] = {}
    for name, source in (("pageable", pageable), ("pinned", pinned)):
        call, total = _median_wall_ms(lambda s=source: target.copy_(s, non_blocking=True),
                                      repeats, device)
        results["call_ms"][name] = {"call": call, "until_done": total}

    # 3. a copy on a side stream while the GPU computes on the current stream
    size = 4096
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    c = torch.empty(size, size, device=device)
    one_matmul = _median_gpu_ms(lambda: torch.matmul(a, b, out=c), max(repeats // 2, 2))
    rounds = max(1, math.ceil(copy_ms["pinned"] / max(one_matmul, 1e-3)))

    def compute():
        for _ in range(rounds):
            torch.matmul(a, b, out=c)

    side = torch.cuda.Stream(device)
    compute_ms = _median_wall_ms(compute, repeats, device)[1]
    results["compute_ms"] = compute_ms
    results["matmuls"] = rounds
    results["overlap"] = {}
    for name, source in (("pinned", pinned), ("pageable", pageable)):
        alone = _median_wall_ms(lambda s=source: target.copy_(s, non_blocking=True),
                                repeats, device)[1]

        def both(s=source):
            compute()  # queued on the current stream; the CPU goes on at once
            with torch.cuda.stream(side):
                target.copy_(s, non_blocking=True)

        together = _median_wall_ms(both, repeats, device)[1]
        results["overlap"][name] = {"copy": alone, "together": together,
                                    "fraction": overlap_fraction(alone, compute_ms, together)}

    # 4. pinning a pageable tensor only to copy it once
    plain = _median_wall_ms(lambda: pageable.to(device), repeats, device)[1]
    pin_then_copy = _median_wall_ms(lambda: pageable.pin_memory().to(device, non_blocking=True),
                                    repeats, device)[1]
    results["once"] = {"to": plain, "pin_then_to": pin_then_copy}
    return results


# --------------------------------------------------------------------------- reporting

def format_report(r: dict) -> str:
    """The measurement as text, with what each line means."""
    g, call, ov, once = r["gbps"], r["call_ms"], r["overlap"], r["once"]
    lines = [
        "minidataloader: host-to-device copies on this GPU",
        f"device: {r['device']} (cuda:{r['device_index']}), torch {r['torch']}, CUDA {r['cuda']}",
        f"one copy: {r['mib']} MiB; each figure is the median of {r['repeats']} runs",
        "",
        "1. Bandwidth (GPU time of the copy, CUDA events)",
        f"   from pageable memory                     {g['pageable']:7.1f} GB/s",
        f"   from pinned memory                       {g['pinned']:7.1f} GB/s"
        f"   ({g['pinned'] / g['pageable']:.1f}x pageable)",
        f"   from pinned memory, non_blocking=True    {g['pinned, non_blocking']:7.1f} GB/s",
        "",
        "2. How long the call .copy_(source, non_blocking=True) holds the CPU",
        f"   pageable source: {call['pageable']['call']:8.2f} ms of "
        f"{call['pageable']['until_done']:.2f} ms until the copy is done",
        f"   pinned source:   {call['pinned']['call']:8.2f} ms of "
        f"{call['pinned']['until_done']:.2f} ms until the copy is done",
        "",
        f"3. Copy on a second stream while the GPU computes ({r['matmuls']} matmuls of "
        f"4096x4096, {r['compute_ms']:.2f} ms alone)",
    ]
    for name in ("pinned", "pageable"):
        o = ov[name]
        lines.append(f"   {name + ':':10} copy alone {o['copy']:7.2f} ms, both {o['together']:7.2f}"
                     f" ms: {o['fraction']:4.0%} of the shorter one hidden")
    lines += [
        "",
        "4. Pinning a pageable tensor just to copy it once",
        f"   t.to(device)                                    {once['to']:8.2f} ms",
        f"   t.pin_memory().to(device, non_blocking=True)    {once['pin_then_to']:8.2f} ms"
        f"   ({once['pin_then_to'] / once['to']:.1f}x)",
        "",
        "How to read it: (1) pinned memory is what the GPU's copy engine reads directly; from",
        "pageable memory the driver first copies into a pinned buffer of its own. (2) Only a",
        "pinned source lets non_blocking=True return before the copy ends: that is what frees",
        "the CPU to prepare the next step. (3) Overlap with computation also needs a pinned",
        "source, and a second stream (on one stream, work runs in order). (4) Pinning costs a",
        "copy of its own: it pays when a thread does it ahead of time, as the DataLoader's pin",
        "thread does, not right before the copy.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minidataloader.bench.gpu_bandwidth",
        description="Measure host-to-device copy bandwidth (pageable vs pinned memory), "
                    "non_blocking copies, and copy/compute overlap on a CUDA GPU.")
    parser.add_argument("--mib", type=int, default=256,
                        help="size of one copy, in MiB (default: 256)")
    parser.add_argument("--repeats", type=int, default=10,
                        help="runs per figure; the median is shown (default: 10)")
    parser.add_argument("--device", default="cuda",
                        help="the CUDA device, e.g. cuda:1 (default: the current one)")
    args = parser.parse_args(argv)
    if args.mib < 1:
        parser.error(f"--mib should be at least 1, got {args.mib}")
    if args.repeats < 1:
        parser.error(f"--repeats should be at least 1, got {args.repeats}")
    if not args.device.startswith("cuda"):
        parser.error(f"--device should be a CUDA device such as cuda or cuda:0, got {args.device!r}")
    reason = no_cuda_reason()
    if reason is not None:
        print(reason, file=sys.stderr)
        return NO_CUDA_STATUS
    print(format_report(measure(args.mib, args.repeats, args.device)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
