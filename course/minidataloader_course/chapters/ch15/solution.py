"""Chapter 15 (an open capstone): model solutions. ``collate_recordings`` and
``capstone_loader`` are pieces of the learner's loader (``myloader/capstone.py``); the
book's choice of settings is one of many that meet the target."""

import torch

from minidataloader_course.chapters.ch14.solution import StatefulDataLoader


def padding_share(lengths, batch_size):
    padded = real = 0
    for start in range(0, len(lengths), batch_size):
        batch = lengths[start:start + batch_size]
        padded += max(batch) * len(batch)  # every row as long as the batch's longest
        real += sum(batch)
    return (padded - real) / padded if padded else 0.0


def collate_recordings(samples):
    longest = max(len(sample["signal"]) for sample in samples)
    signal = torch.zeros(len(samples), longest)  # zeros: the padding
    for row, sample in enumerate(samples):
        signal[row, :len(sample["signal"])] = sample["signal"]
    return {"signal": signal,
            "length": torch.tensor([len(sample["signal"]) for sample in samples]),
            "label": torch.tensor([sample["label"] for sample in samples]),
            "index": torch.tensor([sample["index"] for sample in samples])}


def capstone_loader(dataset, generator):
    # Reads wait on the disk and leave the CPUs idle: workers read in parallel even on two
    # cores. 128 recordings in batches of 16 are 8 batches an epoch: one per worker.
    return StatefulDataLoader(dataset, batch_size=16, shuffle=True, num_workers=8,
                              prefetch_factor=2, collate_fn=collate_recordings,
                              generator=generator)
