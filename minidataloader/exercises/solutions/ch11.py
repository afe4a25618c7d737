"""Chapter 11 (performance): model solutions."""

import torch


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


def sliced_batches(features, labels, batch_size, generator):
    order = torch.randperm(len(labels), generator=generator)  # RandomSampler's draw
    for start in range(0, len(labels), batch_size):
        indices = order[start:start + batch_size]
        yield features[indices], labels[indices]
