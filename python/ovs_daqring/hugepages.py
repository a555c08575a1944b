"""DPDK memory for a private ovs-vswitchd: hugepages reserved for the run
and given back after it, or the --no-huge fallback.

A fresh machine has no hugepages (vm.nr_hugepages = 0) and no hugetlbfs
mount.  As root, reserve() raises nr_hugepages by the pages a run asks for
(a second reservation of the same run: by what is missing) and
mounts a hugetlbfs of its own (even if one is mounted: another run's
mount may go away while this run still starts DPDK); the Cleanup stack
undoes both.  The undo lowers nr_hugepages by the number of pages this run
added (not back to an absolute value), so runs that overlap on one machine
do not take each other's pages away.  Where hugepages cannot be had, DPDK runs
with --no-huge, which needs --legacy-mem (ovs-vswitchd otherwise adds
--in-memory, which DPDK refuses together with --no-huge) and so a file
prefix of its own, whose runtime directory is removed afterwards.

This module is the one implementation: the shell parts of the build use
its command line (see main()), e.g. the system tests' DAQ_HUGEPAGES
macro and build-aux/run-checks:

  eval "$(python3 -m ovs_daqring.hugepages reserve MB MOUNT_DIR)"
  ... $huge_reason is empty when hugepages can be used ...
  python3 -m ovs_daqring.hugepages give-back $huge_added $huge_mount"""

import argparse
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from .process import Cleanup, RunError, pid_alive, run

NR_HUGEPAGES = "/proc/sys/vm/nr_hugepages"
PROC_MOUNTS = "/proc/mounts"
# DPDK's runtime directories, one per --file-prefix.
DPDK_RUNDIR = "/var/run/dpdk"
# Next to a mount directory, what reserve() did (JSON: added, mount), so
# that a run killed before its Cleanup ran can be undone by another
# process (give_back_stale(), daq-incast/daq-bench --cleanup-stale).
RECORD = ".reserved"


def _meminfo() -> Tuple[int, int]:
    """(available hugepages, hugepage size in kB) of the default size.
    Available: free and not reserved.  HugePages_Free counts the pages
    that mappings have reserved but not touched yet (HugePages_Rsvd),
    which no other process can have."""
    free = rsvd = size_kb = 0
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key == "HugePages_Free":
                    free = int(rest.split()[0])
                elif key == "HugePages_Rsvd":
                    rsvd = int(rest.split()[0])
                elif key == "Hugepagesize":
                    size_kb = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return max(0, free - rsvd), size_kb or 2048


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


def _is_hugetlbfs_mount(path: str) -> bool:
    real = os.path.realpath(path)
    try:
        with open(PROC_MOUNTS) as f:
            return any(len(f_) > 2 and f_[2] == "hugetlbfs"
                       and os.path.realpath(f_[1]) == real
                       for f_ in (line.split() for line in f))
    except OSError:
        return False


@dataclass
class Reservation:
    """What _reserve() did, to be undone by give_back()."""
    reason: Optional[str]       # Why hugepages cannot be used, or None.
    added: int = 0              # Pages added to nr_hugepages.
    mount: Optional[str] = None     # A hugetlbfs mounted for the run.
    free_mb: int = 0            # Free hugepage memory afterwards.


def _reserve(want_mb: int, mount_dir: str) -> Reservation:
    r = Reservation(None)
    free, size_kb = _meminfo()
    want = -(-want_mb * 1024 // size_kb)
    # A run's first reservation adds its own pages, even when the pool
    # has free pages: those may be another run's, reserved but not yet
    # taken by its DPDK process, and two runs that both counted them would
    # each find less than they need (seen: "Not enough memory available
    # on socket 0! Requested: 1536MB, available: 1280MB" in a test that
    # ran beside another suite).  A second reservation of the same run
    # (its mount is already there) counts the pages the run added.
    first = not _is_hugetlbfs_mount(mount_dir)
    add = want if first else max(0, want - free)
    if add and os.geteuid() != 0:
        if free >= want:
            add = 0
        else:
            r.reason = ("%d MB of hugepages free, %d MB needed, and only "
                        "root can reserve more"
                        % (free * size_kb // 1024, want_mb))
            return r
    if add:
        try:
            total = _read_int(NR_HUGEPAGES)
            _write_int(NR_HUGEPAGES, total + add)
            r.added = max(0, _read_int(NR_HUGEPAGES) - total)
        except (OSError, ValueError) as e:
            r.reason = "cannot reserve hugepages: %s" % e
            return r
        free, size_kb = _meminfo()
        # The run has what it asked for if the pool has that much free,
        # or if the kernel gave it all the pages it added.
        if free < want and not (first and r.added >= want):
            r.free_mb = free * size_kb // 1024
            r.reason = ("the kernel gave only %d of %d hugepages (memory "
                        "too fragmented?)" % (r.added, add))
            return r
    r.free_mb = free * size_kb // 1024
    # A hugetlbfs of our own even if one is mounted: another run's mount
    # may go away while this one still starts DPDK processes.  (Unless
    # MOUNT_DIR is one already: a second reservation of the same run.)
    if os.geteuid() == 0 and not _is_hugetlbfs_mount(mount_dir):
        os.makedirs(mount_dir, exist_ok=True)
        try:
            run(["mount", "-t", "hugetlbfs", "none", mount_dir])
            r.mount = mount_dir
        except RunError as e:
            if not hugetlbfs_mounted():
                r.reason = ("no hugetlbfs mount and mounting one failed: %s"
                            % e)
    elif not hugetlbfs_mounted():
        r.reason = "no hugetlbfs is mounted, and only root can mount one"
    return r


def give_back(added: int, mount: Optional[str]) -> None:
    """Undo a reservation: unmount MOUNT (if any) and remove its
    directory if empty, then lower nr_hugepages by ADDED."""
    try:
        if mount:
            run(["umount", mount])
            try:
                os.rmdir(mount)
            except OSError:
                pass
    finally:
        if added > 0:
            _give_back(added)


def reserve(want_mb: int, mount_dir: str, cleanup: Cleanup
            ) -> Optional[str]:
    """Make `want_mb` MB of hugepages free and a hugetlbfs mounted, as
    root, pushing the undo of whatever was done onto `cleanup`.  Returns
    None when hugepages can be used, else why not (for a note)."""
    r = _reserve(want_mb, mount_dir)
    if r.added > 0 or r.mount:
        # Removed last, after the undo below succeeded.
        rec = mount_dir.rstrip("/") + RECORD
        os.makedirs(os.path.dirname(rec) or ".", exist_ok=True)
        with open(rec, "w") as f:
            json.dump({"added": r.added, "mount": r.mount}, f)
        cleanup.push("remove " + rec, lambda: os.unlink(rec))
    if r.added > 0:
        cleanup.push("give back %d hugepages" % r.added,
                     lambda: _give_back(r.added))
    if r.mount:
        mount = r.mount
        cleanup.push("unmount " + mount, lambda: run(["umount", mount]))
    return r.reason


def _hugetlbfs_mounts_under(top: str) -> List[str]:
    """hugetlbfs mount points inside directory TOP, deepest first."""
    top = os.path.realpath(top)
    out = []
    with open(PROC_MOUNTS) as f:
        for line in f:
            fields = line.split()
            if len(fields) > 2 and fields[2] == "hugetlbfs":
                real = os.path.realpath(fields[1])
                if real.startswith(top + os.sep):
                    out.append(real)
    return sorted(out, key=len, reverse=True)


def give_back_stale(top: str) -> List[str]:
    """Undoes the reservations of a run that died before its Cleanup ran
    (SIGKILL, a crash): unmounts every hugetlbfs inside directory TOP,
    lowers nr_hugepages by what each record there says the run added,
    and removes the records.  Returns what was done; raises RunError or
    OSError if something could not be undone."""
    done = []
    for mnt in _hugetlbfs_mounts_under(top):
        run(["umount", mnt])
        done.append("unmounted hugetlbfs %s" % mnt)
    for dirpath, _, files in os.walk(top):
        for name in sorted(files):
            if not name.endswith(RECORD):
                continue
            path = os.path.join(dirpath, name)
            try:
                with open(path) as f:
                    added = int(json.load(f).get("added") or 0)
            except (ValueError, AttributeError, TypeError) as e:
                raise OSError("%s: not a reservation record: %s"
                              % (path, e))
            if added > 0:
                _give_back(added)
                done.append("gave back %d hugepages" % added)
            os.unlink(path)
    return done


def remove_stale_runs(workdir_re: str, prefix_re: str
                      ) -> Tuple[List[str], List[str]]:
    """Removes what runs of a tool left behind when they were killed:
    their work directories in the temporary directory (names matching
    WORKDIR_RE, group 1 the run's pid) with the hugepages reserved and
    the hugetlbfs mounted in them, and DPDK's runtime directories of
    their file prefixes (names matching PREFIX_RE, group 1 the pid).
    Only runs whose process is gone.  Returns what was done and what
    could not be (a directory whose hugepages could not be given back is
    kept)."""
    done, errors = [], []
    tmp = tempfile.gettempdir()
    for name in sorted(os.listdir(tmp)):
        m = re.match(workdir_re, name)
        path = os.path.join(tmp, name)
        if not m or pid_alive(int(m.group(1))) or not os.path.isdir(path):
            continue
        try:
            done += give_back_stale(path)
        except (OSError, RunError) as e:
            errors.append("%s: %s" % (path, e))
            continue
        shutil.rmtree(path, ignore_errors=True)
        done.append("removed %s" % path)
    if os.path.isdir(DPDK_RUNDIR):
        for name in sorted(os.listdir(DPDK_RUNDIR)):
            m = re.match(prefix_re, name)
            if m and not pid_alive(int(m.group(1))):
                path = os.path.join(DPDK_RUNDIR, name)
                shutil.rmtree(path, ignore_errors=True)
                done.append("removed %s" % path)
    return done, errors


def dpdk_memory_config(use_hugepages: bool, socket_mem: str,
                       no_huge_mb: int, file_prefix: str,
                       cleanup: Cleanup) -> Tuple[List[str], str]:
    """The other_config settings and dpdk-extra arguments for DPDK's
    memory: (["other_config:dpdk-socket-mem=..."], "--in-memory ...") with
    hugepages, ([], "--no-huge --legacy-mem -m N --file-prefix=P")
    without them.  DPDK's runtime directory for the prefix (made even with
    --in-memory) goes with `cleanup`."""
    rundir = os.path.join(DPDK_RUNDIR, file_prefix)
    cleanup.push("remove " + rundir,
                 lambda: shutil.rmtree(rundir, ignore_errors=True))
    if use_hugepages:
        return (["other_config:dpdk-socket-mem=%s" % socket_mem],
                "--in-memory --file-prefix=%s" % file_prefix)
    return ([], "--no-huge --legacy-mem -m %d --file-prefix=%s"
            % (no_huge_mb, file_prefix))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line for shell scripts (see the module's doc).

    reserve MB MOUNT_DIR [--prefix P]: prints shell assignments
        P_reason (empty when hugepages can be used), P_added, P_mount
        (the directory if a hugetlbfs was mounted there, else empty) and
        P_free_mb; P is "huge" by default.  Exit status 0 either way.
    give-back ADDED [MOUNT]: undoes what reserve printed."""
    p = argparse.ArgumentParser(
        prog="python3 -m ovs_daqring.hugepages",
        description="Reserve DPDK hugepages for a run and give them back.")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reserve")
    r.add_argument("mb", type=int)
    r.add_argument("mount_dir")
    r.add_argument("--prefix", default="huge")
    g = sub.add_parser("give-back")
    g.add_argument("added", type=int)
    g.add_argument("mount", nargs="?", default="")
    args = p.parse_args(argv)
    if args.cmd == "reserve":
        res = _reserve(args.mb, os.path.abspath(args.mount_dir))
        for key, value in (("reason", res.reason or ""),
                           ("added", str(res.added)),
                           ("mount", res.mount or ""),
                           ("free_mb", str(res.free_mb))):
            print("%s_%s=%s" % (args.prefix, key, shlex.quote(value)))
        return 0
    try:
        give_back(args.added, args.mount or None)
    except (OSError, ValueError, RunError) as e:
        sys.stderr.write("hugepages: give-back: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
