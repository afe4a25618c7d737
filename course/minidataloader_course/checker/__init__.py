"""The checker: exercises, their cases, the sandbox that runs a reader's code, verdicts."""
