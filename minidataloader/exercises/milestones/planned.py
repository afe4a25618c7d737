"""The milestones of Part II, declared with what they will check (see this package's README:
"The learner's track"). They report "not written yet" until their suites are added."""

from . import Milestone, register_milestone

register_milestone(Milestone(
    number=13,
    title="your DataLoader in the capstone's training runs",
    planned="the capstone's two training runs with num_workers=2, persistent workers and the "
            "pinning path (an injected pin function), loss for loss equal to torch's",
))
