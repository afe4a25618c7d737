"""Chapter 9's side-stream prefetcher (course/minidataloader_course/chapters/ch09/prefetcher.py): on the CPU a
pass-through with the loader's batches and length; on a CUDA GPU the same batches, on the
GPU, epoch after epoch. The CUDA tests run only where there is one (and are skipped here,
on the machine that builds the book). Also the pinned-memory facts chapter 9 states."""

from __future__ import annotations

from collections import namedtuple

import pytest
import torch
import torch.utils.data as tud

import minidataloader as mdl
from minidataloader_course.chapters.ch09.prefetcher import Prefetcher, move

pytestmark = pytest.mark.timeout(120)
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

Pair = namedtuple("Pair", ["x", "label"])


class Samples(mdl.Dataset):
    """Containers of every kind move() handles, around tensors and other values."""

    def __len__(self):
        return 10

    def __getitem__(self, i):
        return {"pair": Pair(torch.full((3,), float(i)), i), "name": f"s{i}",
                "list": [torch.tensor([i, -i])]}


def as_lists(batch):
    if isinstance(batch, torch.Tensor):
        return ("tensor", batch.device.type, batch.tolist())
    if isinstance(batch, dict):
        return {key: as_lists(value) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)):
        return (type(batch).__name__, [as_lists(item) for item in batch])
    return batch


@pytest.mark.parametrize("library", [tud, mdl])
def test_on_the_cpu_it_passes_the_loaders_batches_through(library):
    loader = library.DataLoader(Samples(), batch_size=4, shuffle=True,
                                generator=torch.Generator().manual_seed(0))
    prefetcher = Prefetcher(loader, "cpu")
    assert prefetcher.stream is None and len(prefetcher) == len(loader) == 3
    loader.generator.manual_seed(0)
    expected = [as_lists(batch) for _ in range(2) for batch in loader]
    loader.generator.manual_seed(0)
    got = [as_lists(batch) for _ in range(2) for batch in prefetcher]
    assert got == expected


def test_cuda_without_a_gpu_is_a_pass_through_too():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    loader = mdl.DataLoader(range(5), batch_size=2)
    prefetcher = Prefetcher(loader, "cuda")
    assert prefetcher.stream is None
    with pytest.raises((AssertionError, RuntimeError)):  # no CUDA: moving fails, loudly
        list(prefetcher)


def test_move_keeps_every_container_and_leaves_other_values():
    batch = {"pair": Pair(torch.ones(2), "a"), "names": ["a", "b"], "n": 3,
             "tuple": (torch.zeros(1), None)}
    moved = move(batch, "cpu")
    assert as_lists(moved) == as_lists(batch)
    assert type(moved["pair"]) is Pair and moved["names"] == ["a", "b"] and moved["n"] == 3


@needs_cuda
@pytest.mark.parametrize("workers", [0, 2])
def test_on_a_gpu_every_batch_arrives_whole_and_on_the_gpu(workers):
    dataset = mdl.TensorDataset(torch.randn(64, 256), torch.arange(64))
    loader = mdl.DataLoader(dataset, batch_size=8, shuffle=True, num_workers=workers,
                            pin_memory=True, generator=torch.Generator().manual_seed(0))
    prefetcher = Prefetcher(loader, "cuda")
    assert prefetcher.stream is not None
    for _ in range(2):
        loader.generator.manual_seed(0)
        expected = [(x.clone(), y.clone()) for x, y in loader]
        loader.generator.manual_seed(0)
        total = 0
        for (x, y), (ex, ey) in zip(prefetcher, expected):
            assert x.is_cuda and y.is_cuda
            out = (x * 2).sum(dim=1)  # a step on the default stream, reading the batch
            assert torch.equal(out.cpu(), (ex * 2).sum(dim=1)) and torch.equal(y.cpu(), ey)
            total += 1
        assert total == len(loader)


@needs_cuda
def test_a_non_blocking_copy_to_the_host_is_valid_after_a_sync():
    source = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
    host = source.to("cpu", non_blocking=True)  # queued; the CPU must not read it yet
    torch.cuda.current_stream().synchronize()
    assert torch.equal(host, torch.arange(1 << 20, dtype=torch.float32))


@needs_cuda
def test_the_pinned_memory_cache_keeps_freed_blocks_until_emptied():
    torch.accelerator.empty_host_cache()
    block = torch.empty(3 << 20, dtype=torch.uint8).pin_memory()  # 3 MiB: a 4 MiB block
    del block
    held = torch.cuda.host_memory_stats()["allocated_bytes.current"]
    assert held >= 4 << 20  # freed, but cached, and rounded up to a power of two
    torch.accelerator.empty_host_cache()
    assert torch.cuda.host_memory_stats()["allocated_bytes.current"] < held
