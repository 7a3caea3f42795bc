"""Turns for two load clients measured alternately in one run (ours, the anchor, ours, ...).

Two clients share a turn file: each waits for its own name and round number in it, runs the
round, and hands the turn to the other. The file holds one line, "NAME ROUND", replaced
atomically. While one measures, the other sleeps, so the two never share the CPU, and the
machine's drift over the run falls on both alike. Start the run by writing the first turn
(`echo "ours 1" > FILE`) before starting either client.
"""

import os
import time


class TurnTimeout(Exception):
    pass


class Turns:
    def __init__(self, path, me, other, timeout=600.0):
        self.path, self.me, self.other, self.timeout = path, me, other, timeout

    def _read(self):
        try:
            with open(self.path) as fh:
                return fh.read().strip()
        except FileNotFoundError:
            return ""

    def wait(self, round_number):
        """Blocks until the file names this client and ROUND_NUMBER."""
        want = f"{self.me} {round_number}"
        deadline = time.monotonic() + self.timeout
        while self._read() != want:
            if time.monotonic() > deadline:
                raise TurnTimeout(f"{self.me}: no turn {round_number} within {self.timeout:.0f} s "
                                  f"(the turn file says '{self._read()}')")
            time.sleep(0.02)

    def hand_over(self, round_number):
        """Gives the turn to the other client, for its ROUND_NUMBER."""
        tmp = f"{self.path}.{self.me}.tmp"
        with open(tmp, "w") as fh:
            fh.write(f"{self.other} {round_number}\n")
        os.replace(tmp, self.path)


def from_args(path, me, other):
    """A Turns for a client's --turns FILE option, or None when it runs alone."""
    return Turns(path, me, other) if path else None
