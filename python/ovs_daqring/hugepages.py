"""DPDK memory for a private ovs-vswitchd: hugepages reserved for the run
and given back after it, or the --no-huge fallback.

A fresh machine has no hugepages (vm.nr_hugepages = 0) and no hugetlbfs
mount.  As root, reserve() raises nr_hugepages by what is missing and
mounts a hugetlbfs of its own (even if one is mounted: another run's
mount may go away while this run still starts DPDK); the Cleanup stack
undoes both.  The undo lowers nr_hugepages by the number of pages this run
added (not back to an absolute value), so runs that overlap on one machine
do not take each other's pages away.  Where hugepages cannot be had, DPDK runs
with --no-huge, which needs --legacy-mem (ovs-vswitchd otherwise adds
--in-memory, which DPDK refuses together with --no-huge) and so a file
prefix of its own, whose runtime directory is removed afterwards."""

import os
import shutil
from typing import List, Optional, Tuple

from .process import Cleanup, RunError, run

NR_HUGEPAGES = "/proc/sys/vm/nr_hugepages"


def _meminfo() -> Tuple[int, int]:
    """(free hugepages, hugepage size in kB) of the default size."""
    free = size_kb = 0
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key == "HugePages_Free":
                    free = int(rest.split()[0])
                elif key == "Hugepagesize":
                    size_kb = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return free, size_kb or 2048


def free_mb() -> int:
    """Free hugepage memory of the default page size, in MB."""
    free, size_kb = _meminfo()
    return free * size_kb // 1024


def hugetlbfs_mounted() -> bool:
    try:
        with open("/proc/mounts") as f:
            return any(len(line.split()) > 2
                       and line.split()[2] == "hugetlbfs" for line in f)
    except OSError:
        return False


def _read_int(path: str) -> int:
    with open(path) as f:
        return int(f.read().split()[0])


def _write_int(path: str, value: int) -> None:
    with open(path, "w") as f:
        f.write("%d\n" % value)


def _give_back(added: int) -> None:
    """Lower nr_hugepages by `added`, whatever others did meanwhile."""
    _write_int(NR_HUGEPAGES, max(0, _read_int(NR_HUGEPAGES) - added))


def reserve(want_mb: int, mount_dir: str, cleanup: Cleanup
            ) -> Optional[str]:
    """Make `want_mb` MB of hugepages free and a hugetlbfs mounted, as
    root, pushing the undo of whatever was done onto `cleanup`.  Returns
    None when hugepages can be used, else why not (for a note)."""
    free, size_kb = _meminfo()
    want = -(-want_mb * 1024 // size_kb)
    if free < want:
        if os.geteuid() != 0:
            return ("%d MB of hugepages free, %d MB needed, and only root "
                    "can reserve more" % (free * size_kb // 1024, want_mb))
        try:
            total = _read_int(NR_HUGEPAGES)
            _write_int(NR_HUGEPAGES, total + want - free)
            added = _read_int(NR_HUGEPAGES) - total
        except (OSError, ValueError) as e:
            return "cannot reserve hugepages: %s" % e
        if added > 0:
            cleanup.push("give back %d hugepages" % added,
                         lambda: _give_back(added))
        free, size_kb = _meminfo()
        if free < want:
            return ("the kernel gave only %d of %d hugepages (memory too "
                    "fragmented?)" % (free, want))
    # A hugetlbfs of our own even if one is mounted: another run's mount
    # may go away while this one still starts DPDK processes.
    if os.geteuid() == 0:
        os.makedirs(mount_dir, exist_ok=True)
        try:
            run(["mount", "-t", "hugetlbfs", "none", mount_dir])
        except RunError as e:
            if not hugetlbfs_mounted():
                return "no hugetlbfs mount and mounting one failed: %s" % e
            return None
        cleanup.push("unmount " + mount_dir,
                     lambda: run(["umount", mount_dir]))
    elif not hugetlbfs_mounted():
        return "no hugetlbfs is mounted, and only root can mount one"
    return None


def dpdk_memory_config(use_hugepages: bool, socket_mem: str,
                       no_huge_mb: int, file_prefix: str,
                       cleanup: Cleanup) -> Tuple[List[str], str]:
    """The other_config settings and dpdk-extra arguments for DPDK's
    memory: (["other_config:dpdk-socket-mem=..."], "--in-memory ...") with
    hugepages, ([], "--no-huge --legacy-mem -m N --file-prefix=P")
    without them.  DPDK's runtime directory for the prefix (made even with
    --in-memory) goes with `cleanup`."""
    rundir = os.path.join("/var/run/dpdk", file_prefix)
    cleanup.push("remove " + rundir,
                 lambda: shutil.rmtree(rundir, ignore_errors=True))
    if use_hugepages:
        return (["other_config:dpdk-socket-mem=%s" % socket_mem],
                "--in-memory --file-prefix=%s" % file_prefix)
    return ([], "--no-huge --legacy-mem -m %d --file-prefix=%s"
            % (no_huge_mb, file_prefix))
