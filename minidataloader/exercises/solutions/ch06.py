"""Chapter 6 (workers and queues): model solutions."""


def worker_loop(dataset, collate_fn, index_queue, result_queue):
    while True:
        task = index_queue.get()  # wait for the next task
        if task is None:  # the sentinel: no more work
            return
        batch_number, indices = task
        try:
            batch = collate_fn([dataset[i] for i in indices])
        except Exception as error:  # a bad sample must not kill the worker:
            batch = error  # send the error back, and go on
        result_queue.put((batch_number, batch))


def dispatch_schedule(num_batches, num_workers, prefetch_factor):
    in_flight = prefetch_factor * num_workers  # sent by iter(loader)
    schedule = []
    for batch in range(num_batches):
        worker = batch % num_workers  # round robin
        trigger = None if batch < in_flight else batch - in_flight
        schedule.append((worker, trigger))
    return schedule


def samples_loaded_ahead(dataset_size, batch_size, num_workers, prefetch_factor=2,
                         drop_last=False):
    if num_workers == 0:
        return 0  # the main process loads a batch only when next() asks for it
    full_batches, leftover = divmod(dataset_size, batch_size)
    sizes = [batch_size] * full_batches
    if leftover and not drop_last:
        sizes.append(leftover)
    return sum(sizes[:prefetch_factor * num_workers])  # batches sent by iter()


def reorder_batches(arrivals, in_order=True):
    waiting = {}  # batch number -> batch, for those that came early
    next_number = 0
    for number, batch in arrivals:
        if not in_order:
            yield batch  # whatever is ready goes out at once
            continue
        waiting[number] = batch
        while next_number in waiting:  # hand out all that is now in order
            yield waiting.pop(next_number)
            next_number += 1
