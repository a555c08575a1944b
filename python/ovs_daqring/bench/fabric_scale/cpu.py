# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The CPU time the processes of daq-bench --fabric's fabric use, by


class (the agents, the switches' ovsdb-servers, ovs-vswitchd, the
fabric database, the flow monitors, the bench), and how the results
print it."""

import os
from typing import Any, Dict


def proc_cpu_s(pid: int) -> float:
    """CPU seconds of process 'pid' (every thread), plus those of the
    children it has reaped (an agent's ovs-ofctl runs): utime, stime,
    cutime and cstime of /proc/PID/stat.  0 for a process gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            # After the command's name, which may hold spaces and ")":
            # field 3 (the state) on; utime is field 14.
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


# What cpu_snapshot() adds up, in the order the results list it.
CPU_CLASSES = ("agents", "switch ovsdb-servers", "ovs-vswitchd",
               "fabric database", "flow monitors", "bench")


def cpu_delta(before: Dict[str, float], after: Dict[str, float],
              wall_s: float) -> Dict[str, Any]:
    """The CPU seconds of each class of process between two
    cpu_snapshot()s over 'wall_s' seconds, and their sum as cores busy
    on average."""
    cpu = {c: max(0.0, after.get(c, 0.0) - before.get(c, 0.0))
           for c in CPU_CLASSES}
    return {"wall_s": wall_s, "cpu_s": cpu,
            "cores": sum(cpu.values()) / wall_s if wall_s > 0 else None}


def cpu_text(c: Dict[str, Any]) -> str:
    return ("CPU over its %.1f s: %s (%.2f cores busy on average)"
            % (c["wall_s"], ", ".join("%s %.1f s" % (k, c["cpu_s"][k])
                                      for k in CPU_CLASSES),
               c["cores"] or 0.0))
