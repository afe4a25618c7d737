"""Chapter 10: plausible wrong answers to its exercises, written as changes to their
solutions' source; the checks must refuse each one with a verdict that names the
rule (``says``). See :class:`~minidataloader_course.checker.framework.Mutant`."""

from minidataloader_course.checker.framework import mutant as m

MUTANTS = [
    m("rebuild_exception", "has no fallback",
      [("    try:\n        return exc_type(message)\n    except Exception:  # its constructor wants something else than one string\n"
        "        return RuntimeError(message)", "    return exc_type(message)")],
      "fall back to RuntimeError(message)", breaks=3),
    m("rebuild_exception", "falls back only on TypeError",
      [("except Exception:  # its constructor", "except TypeError:  # its constructor")],
      "not TypeError", breaks=3),
    m("rebuild_exception", "builds a plain KeyError",
      [("        return KeyError(KeyErrorMessage(message))\n", "        return KeyError(message)\n")],
      "KeyError's str() is the repr() of its argument", breaks=2),
    m("get_result", "waits the whole timeout before looking at the workers",
      [("return result_queue.get(timeout=0.1)", "return result_queue.get(timeout=timeout)")],
      "not after `timeout`", breaks=2),
    m("get_result", "never looks at the workers",
      [("            if not worker.is_alive():", "            if False:")],
      "look for a worker that is no longer alive", breaks=2),
    m("get_result", "gives the signal's number instead of its name",
      [('f"was killed by {signal.Signals(-code).name}"', 'f"was killed by signal {-code}"')],
      "signal.Signals(-exitcode).name", breaks=2),
    m("shutdown_workers", "does not set done_event",
      [("    done_event.set()  # 1. skip the tasks still queued\n", "")],
      "set done_event first", breaks=2),
    m("shutdown_workers", "does not read the result queue while waiting",
      [("        try:  # 3. read what they still send: a worker cannot exit before it is read\n"
        "            result_queue.get(timeout=0.05)\n        except Exception:  # nothing came; "
        "or a batch whose sender has exited, taking its\n            pass  # tensors with it: "
        "either way, nothing to keep\n",
        "        time.sleep(0.05)\n")],
      "keep reading result_queue", breaks=4),
    m("shutdown_workers", "returns the pids",
      [("terminated.append(worker_id)", "terminated.append(worker.pid)")],
      "not their pids", breaks=3),
    m("worker_loop, watchful", "sends the exception itself",
      [("                batch = WorkerError(type(error), f\"{type(error).__name__} in DataLoader worker \"\n"
        "                                                 f\"{worker_id} (pid {os.getpid()}):\\n\"\n"
        "                                                 f\"{traceback.format_exc()}\")\n",
        "                batch = error\n")],
      "send WorkerError(type(error)", breaks=1),
    m("worker_loop, watchful", "waits for tasks without a timeout",
      [("task = index_queue.get(timeout=1.0)", "task = index_queue.get()")],
      "wait with a timeout", breaks=2),
    m("worker_loop, watchful", "does not notice that its parent died",
      [("if done_event.is_set() or os.getppid() != parent:", "if done_event.is_set():")],
      "compare os.getppid()", breaks=3),
    m("worker_loop, watchful", "leaves its unread results waiting at exit",
      [("        result_queue.cancel_join_thread()\n", "        pass\n")],
      "not to wait for its feeder thread", breaks=3),
    m("worker_loop, watchful", "lets Ctrl-C's KeyboardInterrupt escape (a traceback per worker)",
      [("    except KeyboardInterrupt:  # Ctrl-C reached every process: the main process reports it\n"
        "        pass\n", "    finally:\n        pass\n")],
      "except KeyboardInterrupt", breaks=4),
    m("MultiProcessIterator, guarded", "raises the WorkerError itself",
      [("        if isinstance(data, WorkerError):  # raised as the type it had in the worker\n"
        "            raise rebuild_exception(data.exc_type, data.message)\n", "")],
      "raise rebuild_exception", breaks=1),
    m("MultiProcessIterator, guarded", "ignores loader.timeout",
      [("timeout = self.loader.timeout if self.loader.timeout > 0 else math.inf",
        "timeout = math.inf")],
      "loader.timeout > 0", breaks=4),
    m("MultiProcessIterator, guarded", "has no __del__",
      [("    def __del__(self):  # after break, del or an exception: no worker may outlive it\n"
        "        self._shutdown()\n", "")],
      "__del__ shuts them down", breaks=2),
    m("shared_memory_needed", "forgets the batches the loop holds",
      [("return (in_flight + batches_held) * batch_bytes", "return in_flight * batch_bytes")],
      "held", breaks=1),
    m("shared_memory_needed", "counts shared memory without workers",
      [("    if num_workers == 0:\n        return 0  # batches are made in the main process: nothing crosses processes\n", "")],
      "nothing goes through shared memory", breaks=2),
    m("classify_failure", "checks the categories in alphabetical order",
      [("for category, clues in CLUES:", "for category, clues in sorted(CLUES):")],
      "the statement's order", breaks=1),
    m("classify_failure", "knows torch's wrapping of a worker's exception only",
      [('["in DataLoader worker process", "raised in DataLoader worker"]', '["in DataLoader worker process"]')],
      "whatever its own traceback says", breaks=2),
    m("classify_failure", "checks the signals before the timeout and the open files",
      [('    ("open files", ["Too many open files", "items of ancdata"]),\n'
        '    ("timeout", ["timed out"]),\n', ''),
       ('    ("exited", ["exited"]),\n', '    ("exited", ["exited"]),\n'
        '    ("open files", ["Too many open files", "items of ancdata"]),\n'
        '    ("timeout", ["timed out"]),\n')],
      "the statement's order", breaks=2),
    m("classify_failure", "knows no \"crashed\": any other signal is \"exited\"",
      [('    ("crashed", ["killed by signal", "killed by SIG", "segmentation fault"]),\n', '')],
      "crashed", breaks=3),
    m("classify_failure", "forgets CUDA in a forked worker",
      [('    ("cuda in fork", ["Cannot re-initialize CUDA in forked subprocess"]),\n', "")],
      "Check for it first", breaks=2),
]
