"""The DataLoader and its iterators: one process (chapter 5), then worker processes
(chapter 6, grown through chapter 10)."""

import functools
import itertools
import math
import multiprocessing
import os
import queue
import signal
import threading
import time
import warnings

import torch
from torch.utils.data import IterableDataset

from .collate import default_collate, default_convert
from .fetch import IterableFetcher, MapFetcher
from .pin_memory import pin_batch, pin_loop
from .sampler import BatchSampler, RandomSampler, SequentialSampler
from .worker import Resume, StreamEnded, WorkerError, rebuild_exception, worker_loop


# >>> piece: check_loader_arguments (chapter 5)
def check_loader_arguments(dataset, batch_size=1, shuffle=None, sampler=None,
                           batch_sampler=None, num_workers=0, drop_last=False, timeout=0,
                           prefetch_factor=None, persistent_workers=False):
    raise NotImplementedError  # replace this line with your code
# <<< piece: check_loader_arguments


# >>> piece: loader_len (chapter 5)
def loader_len(dataset, batch_size=1, sampler=None, batch_sampler=None, drop_last=False):
    raise NotImplementedError  # replace this line with your code
# <<< piece: loader_len


# >>> piece: SingleProcessIterator (chapter 5)
class SingleProcessIterator:
    def __init__(self, loader):
        raise NotImplementedError  # the index iterator, the base seed, no timeout, a fetcher

    def __iter__(self):
        raise NotImplementedError  # an iterator is its own iterator

    def __next__(self):
        raise NotImplementedError  # the next batch, or StopIteration

    def __len__(self):
        raise NotImplementedError  # len(loader)
# <<< piece: SingleProcessIterator


# >>> piece: DataLoader (chapter 5; chapter 8 grows it)
class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        raise NotImplementedError  # check the arguments, keep them, choose the parts

    def __len__(self):
        raise NotImplementedError  # what len(torch's DataLoader) says

    def __iter__(self):
        raise NotImplementedError  # a new iterator: one epoch
# <<< piece: DataLoader


# >>> piece: MultiProcessIterator (chapter 6; chapters 7 to 10 grow it)
class MultiProcessIterator:
    def __init__(self, loader):
        raise NotImplementedError  # start the worker(s), send the first task(s)

    def __iter__(self):
        raise NotImplementedError  # an iterator is its own iterator

    def __next__(self):
        raise NotImplementedError  # the next batch, or StopIteration (workers stopped)

    def __len__(self):
        raise NotImplementedError  # len(loader)
# <<< piece: MultiProcessIterator


# >>> piece: resume_workers (chapter 8)
def resume_workers(index_queues, result_queue, workers):
    raise NotImplementedError  # Resume() to each; the stale messages; RuntimeError if one died
# <<< piece: resume_workers


# >>> piece: get_result (chapter 10)
def get_result(result_queue, workers, timeout):
    raise NotImplementedError  # the next result; a dead worker or a timeout is an error
# <<< piece: get_result


# >>> piece: shutdown_workers (chapter 10)
def shutdown_workers(workers, index_queues, result_queue, done_event, timeout):
    raise NotImplementedError  # stop every worker, leave no process behind
# <<< piece: shutdown_workers
