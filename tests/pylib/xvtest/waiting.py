"""Waiting for a condition a test cannot be told about: poll it until it
holds or a deadline passes. Deadlines bound how long a test may hang; no
test asserts on how long anything took."""

import time


def wait_until(predicate, timeout=10.0, interval=0.05, what="condition"):
    """predicate()'s first true value; TimeoutError once timeout seconds passed without one."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(interval)
