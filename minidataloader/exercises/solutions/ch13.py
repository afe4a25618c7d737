"""Chapter 13 (capstone): model solutions."""

import torch
from torch.utils.data import DataLoader, TensorDataset, default_collate, random_split

import minidataloader as mdl


def build_pipeline(features, labels, seed):
    split_generator = torch.Generator().manual_seed(seed)
    train_rows, val_rows = random_split(range(len(labels)), [0.8, 0.2],
                                        generator=split_generator)
    train_rows, val_rows = list(train_rows), list(val_rows)
    training = features[train_rows]  # statistics from the training rows only
    scaled = (features - training.mean(dim=0)) / training.std(dim=0)
    train_set = TensorDataset(scaled[train_rows], labels[train_rows])
    val_set = TensorDataset(scaled[val_rows], labels[val_rows])
    train_loader = DataLoader(train_set, batch_size=16, shuffle=True,
                              drop_last=True,
                              generator=torch.Generator().manual_seed(seed))
    val_loader = DataLoader(val_set, batch_size=64)  # in order, nothing dropped
    return train_loader, val_loader


def choose_loader_settings(scenario):
    training = scenario["phase"] == "train"
    one_left_over = scenario["samples"] % scenario["batch_size"] == 1
    workers = 4 if scenario["reading"] == "from disk" else 0
    return {
        "shuffle": training,  # evaluation keeps the order of the samples
        "drop_last": training and scenario["batch_norm"] and one_left_over,
        "num_workers": workers,  # decoding pays for processes; slicing does not
        "pin_memory": scenario["device"] == "cuda",  # page-locked, for copies
        "persistent_workers": workers > 0 and scenario["epochs"] > 1,
    }


class WorkerSafeNoise:
    def __init__(self, seed):
        self.seed = seed
        self.generator = None
        self.generator_seed = None  # the seed self.generator was made from

    def __call__(self, image):
        info = mdl.get_worker_info()
        seed = self.seed if info is None else info.seed  # this process's own seed
        if self.generator is None or self.generator_seed != seed:
            self.generator = torch.Generator().manual_seed(seed)
            self.generator_seed = seed
        noise = torch.randn(image.shape, generator=self.generator)
        return image + 0.1 * noise  # a new tensor: the dataset's image is kept


class AssembledLoader:
    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False,
                 generator=None):
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.generator = generator

    def __len__(self):
        if self.drop_last:
            return len(self.dataset) // self.batch_size
        return -(-len(self.dataset) // self.batch_size)

    def __iter__(self):
        # 1. the base seed for workers: drawn by iter(), every epoch, workers or not
        torch.empty((), dtype=torch.int64).random_(generator=self.generator)
        return self._batches()  # the rest happens at the first next(), as in a sampler

    def _batches(self):
        n = len(self.dataset)
        if self.shuffle:
            generator = self.generator
            if generator is None:  # 2. one global draw seeds our own generator
                seed = int(torch.empty((), dtype=torch.int64).random_().item())
                generator = torch.Generator().manual_seed(seed)
            order = torch.randperm(n, generator=generator).tolist()  # 3. the order
            torch.randperm(n, generator=generator)  # 4. drawn, never used
        else:
            order = list(range(n))
        for start in range(0, n, self.batch_size):
            indices = order[start:start + self.batch_size]
            if self.drop_last and len(indices) < self.batch_size:
                return
            yield default_collate([self.dataset[i] for i in indices])
