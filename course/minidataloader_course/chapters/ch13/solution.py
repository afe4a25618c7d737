"""Chapter 13 (your loader in training): model solutions."""

import torch
from torch.utils.data import DataLoader, TensorDataset, random_split

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


def seeds_drawn(epochs, shuffle, num_workers, persistent_workers, generator, evaluate):
    if generator:  # the training loader draws from its own generator: nothing global
        training = 0
    else:
        # a base seed for every new iterator: every epoch, or once for persistent workers
        base_seeds = 1 if persistent_workers and num_workers > 0 else epochs
        # a RandomSampler without a generator seeds its own from the global one, each epoch
        training = base_seeds + (epochs if shuffle else 0)
    # every evaluation is a new iterator over a loader with no generator: a base seed,
    # although no worker uses it
    return training + (epochs if evaluate else 0)


def evaluate_quietly(model, loader):
    was_training = model.training
    model.eval()
    correct = count = 0
    # iterating a loader draws a base seed from the global generator: put it back after
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        for inputs, labels in loader:
            correct += (model(inputs).argmax(dim=1) == labels).sum().item()
            count += len(labels)
    model.train(was_training)  # as it was: a training loop goes on training
    return correct / count
