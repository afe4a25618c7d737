"""Chapter 11 (performance): model solutions."""

import torch
from torch.utils.data import Sampler


def benchmark_verdicts(report, noise=0.1):
    verdicts = {}
    for row in report["workloads"]:
        ratio = row["torch_s"] / row["mini_s"]  # above 1: minidataloader took less time
        if ratio > 1 + noise:
            verdicts[row["workload"]] = "minidataloader faster"
        elif ratio < 1 / (1 + noise):
            verdicts[row["workload"]] = "torch faster"
        else:
            verdicts[row["workload"]] = "a tie"
    return verdicts


def fewest_workers(samples_per_s, tolerance=0.1):
    best = max(samples_per_s.values())
    good_enough = [workers for workers, speed in samples_per_s.items()
                   if speed >= (1 - tolerance) * best]
    return min(good_enough)  # every extra worker costs memory and start-up time


def waiting_seconds(records):
    waited_ns = 0
    free_since = None  # when the loop last asked for a batch
    for record in records:
        if record["event"] in ("epoch_start", "step_end"):
            free_since = record["t_ns"]
        elif record["event"] == "yielded" and free_since is not None:
            waited_ns += record["t_ns"] - free_since
            free_since = None
    return waited_ns / 1e9


def sliced_batches(features, labels, batch_size, generator=None):
    if generator is None:  # as RandomSampler: a seed from the global generator, then its own
        seed = int(torch.empty((), dtype=torch.int64).random_())
        generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(labels), generator=generator)  # RandomSampler's draw
    for start in range(0, len(labels), batch_size):
        indices = order[start:start + batch_size]
        yield features[indices], labels[indices]


class TokenBudgetBatchSampler(Sampler):
    def __init__(self, lengths, max_tokens, generator=None):
        if max(lengths) > max_tokens:
            raise ValueError(f"a sample of {max(lengths)} tokens cannot fit in a batch of "
                             f"max_tokens={max_tokens}: raise max_tokens")
        self.lengths = lengths
        self.max_tokens = max_tokens
        self.generator = generator

    def _fill(self, by_length):
        # each batch takes the next samples while its padded size stays within the budget;
        # in length order, the sample to add is the batch's longest
        batches, batch = [], []
        for index in by_length:
            if batch and (len(batch) + 1) * self.lengths[index] > self.max_tokens:
                batches.append(batch)
                batch = []
            batch.append(index)
        if batch:
            batches.append(batch)
        return batches

    def __iter__(self):
        # shuffled first, so that samples of equal length meet in a new order every epoch
        shuffled = torch.randperm(len(self.lengths), generator=self.generator).tolist()
        batches = self._fill(sorted(shuffled, key=lambda i: self.lengths[i]))
        # then the batches in a random order: not all the short ones first
        for i in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[i]

    def __len__(self):
        # the sizes depend on the sorted lengths alone: every epoch has as many batches
        return len(self._fill(sorted(range(len(self.lengths)), key=lambda i: self.lengths[i])))
