"""Chapter 1 (epochs, batches and iterations): model solutions."""

from torch.utils.data import Dataset


def iterations_per_epoch(dataset_size, batch_size, drop_last=False):
    full_batches = dataset_size // batch_size
    if drop_last or dataset_size % batch_size == 0:
        return full_batches
    return full_batches + 1  # the incomplete batch at the end


def last_batch_size(dataset_size, batch_size, drop_last=False):
    if dataset_size == 0 or (drop_last and dataset_size < batch_size):
        return 0  # no batch at all
    leftover = dataset_size % batch_size
    if drop_last or leftover == 0:
        return batch_size
    return leftover


def epochs_for_steps(steps, dataset_size, batch_size, drop_last=False):
    per_epoch = iterations_per_epoch(dataset_size, batch_size, drop_last)
    if per_epoch == 0:
        raise ValueError(f"an epoch of {dataset_size} samples in batches of {batch_size} "
                         f"(drop_last={drop_last}) has no iterations: no number of epochs "
                         f"reaches {steps} steps")
    return -(-steps // per_epoch)  # ceil(steps / per_epoch) with integers only


def batch_indices(dataset_size, batch_size, drop_last=False):
    batch = []
    for index in range(dataset_size):
        batch.append(index)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch and not drop_last:
        yield batch


class TabularDataset(Dataset):
    def __init__(self, table):
        self.features = table[:, :-1]
        self.labels = table[:, -1:]  # -1: keeps a column: each label has shape (1,)

    def __getitem__(self, index):
        return self.features[index], self.labels[index]

    def __len__(self):
        return len(self.labels)

