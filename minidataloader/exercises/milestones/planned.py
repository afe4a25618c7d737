"""The milestones of Part II, declared with what they will check (see this package's README:
"The learner's track"). They report "not written yet" until their suites are added."""

from . import Milestone, register_milestone

register_milestone(Milestone(
    number=7,
    title="your DataLoader with worker processes",
    planned="with num_workers 1 to 3, started with fork and with spawn: the same batches and "
            "the same worker seeds (torch, random and numpy, read through your "
            "get_worker_info) as torch's loader, in order and with in_order=False",
))
register_milestone(Milestone(
    number=10,
    title="your DataLoader when things go wrong",
    planned="an exception in a worker arrives with its type and the worker's traceback; a "
            "killed worker is reported within a few seconds; after break, del, an exception "
            "or the end of an epoch no worker process is left; timeout raises",
))
register_milestone(Milestone(
    number=13,
    title="your DataLoader in the capstone's training runs",
    planned="the capstone's two training runs with num_workers=2, persistent workers and the "
            "pinning path (an injected pin function), loss for loss equal to torch's",
))
