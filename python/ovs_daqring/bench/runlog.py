# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What a daq-bench run tells: its progress lines on standard error, its
notes (the results' "notes") and the logs of its switches it keeps
(OUT/logs/TAG/)."""

import os
import sys
import time
from typing import List

LOG_KEEP = 2 << 20               # bytes of each switch log kept


class RunLog:
    """The progress lines and notes of a run started at 't0'
    (time.monotonic()), quiet or not, with its results in 'out'."""

    def __init__(self, out: str, quiet: bool, t0: float) -> None:
        self.out = out
        self.quiet = quiet
        self.t0 = t0
        self.notes: List[str] = []

    def note(self, text: str) -> None:
        self.notes.append(text)
        self.say("note: " + text)

    def say(self, text: str) -> None:
        if not self.quiet:
            sys.stderr.write("daq-bench [%4.0fs] %s\n"
                             % (time.monotonic() - self.t0, text))
            sys.stderr.flush()

    def keep_logs(self, tag: str, src_dir: str) -> None:
        """The .log and .out files of a switch's directory 'src_dir', into
        OUT/logs/TAG/ (the end of each, LOG_KEEP bytes at most)."""
        dest = os.path.join(self.out, "logs", tag)
        os.makedirs(dest, exist_ok=True)
        for name in (os.listdir(src_dir) if os.path.isdir(src_dir)
                     else []):
            if name.endswith((".log", ".out")):
                src = os.path.join(src_dir, name)
                size = os.path.getsize(src)
                with open(src, "rb") as f, \
                        open(os.path.join(dest, name), "wb") as g:
                    if size > LOG_KEEP:
                        # Thousands of daqrings log millions of lines.
                        f.seek(size - LOG_KEEP)
                        f.readline()
                        g.write(b"[daq-bench: %d bytes, only the end kept]"
                                b"\n" % size)
                    g.write(f.read())
