# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ovs-daqring-sandbox: a switch of the built tree to try daqrings in
("make sandbox", like Open vSwitch's own "make sandbox").

Starts ovsdb-server and a DPDK ovs-vswitchd of the built OVS tree (ovs/)
in a private directory, as the tests and daq-incast do (sandbox.Sandbox):
its hugepages reserved for the run, its PMD thread pinned, DPDK with
--no-pci and a file prefix of its own.  Creates a userspace bridge and
sink ports p1..pN, then runs a shell (or the command given after "--")
whose PATH, OVS_RUNDIR, OVS_DBDIR and OVS_LOGDIR point at the sandbox:
ovs-vsctl, ovs-ofctl, ovs-appctl and ovs-daqctl there talk to this
switch, with the built tree's tools.  When the shell exits (or the
sandbox gets SIGTERM or SIGHUP) both daemons are stopped, the hugepages
given back, the hugetlbfs unmounted and the directory removed.

The program's argument parser and main() (utilities/ovs-daqring-sandbox).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import TOP, VERSION, hugepages, tool_path
from ..hosts import ConfigError, parse_cpu_mask
from ..process import (Cleanup, Interrupted, RunError, die_with_parent,
                       read_text)
from ..sandbox import Sandbox, dpdk_settings, tree_binaries

PROG = "ovs-daqring-sandbox"
DEFAULT_OVS_BUILD = os.path.join(TOP, "ovs")
# Debian's DPDK has at most 32 ethdev ports per process (ENVIRONMENT):
# the sink ports are net_null ethdevs.
PORTS_MAX = 30
# The sandbox's directory when --dir is not given, and its DPDK file
# prefix: both name the sandbox's pid, so that what a sandbox killed by
# SIGKILL left is found and removed by the next one (hugepages.py).
WORKDIR_FMT = "ovs-daqring-sandbox.%d"
WORKDIR_RE = r"^ovs-daqring-sandbox\.(\d+)$"
# A directory kept (--keep) when the sandbox has ended.
KEPT_FMT = "ovs-daqring-sandbox-kept.%d"
PREFIX_FMT = "dqs%d"
PREFIX_RE = r"^dqs(\d+)$"
# An OpenFlow bridge of the netdev datapath is also a tap device: a
# network device name.
BRIDGE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,14}$")
PROMPT = "(daqring-sandbox) "

EPILOG = """\
examples:
  make sandbox                       a shell with the switch of ovs/
  ovs-daqring-sandbox --ports 2 -- ovs-vsctl show
  ovs-daqring-sandbox -- sh -c 'ovs-vsctl add-port br0 dcm7 -- \\
      set Interface dcm7 type=daqring && ovs-appctl netdev-daqring/show'

Inside, the examples of Documentation/topics/daqring.rst and ovs-daqctl.rst
(bridge br0, ports p1..p4) run as they are written.  Exit status: the
shell's (or the command's); 1 if the switch could not be started or not
everything was undone; 2 for a bad argument."""


# ==================================================================== parse
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, usage="%(prog)s [OPTION]... [-- COMMAND [ARG]...]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Start the built ovs-vswitchd with DPDK in a private "
        "directory, with a userspace bridge and sink ports, and run a "
        "shell (or COMMAND) that talks to it; stop it and give its "
        "hugepages back when the shell exits.  Needs root.",
        epilog=EPILOG)
    p.add_argument("--ovs-build", metavar="DIR", default=DEFAULT_OVS_BUILD,
                   help="the built OVS tree (default: %(default)s)")
    p.add_argument("--bridge", default="br0", metavar="NAME",
                   help="the bridge to create, datapath_type=netdev "
                   "(default: %(default)s)")
    p.add_argument("--ports", type=int, default=4, metavar="N",
                   help="sink ports p1..pN (DPDK net_null devices that "
                   "receive nothing and drop what they are sent), "
                   "OpenFlow ports 1..N, 0 to %d (default: %%(default)s)"
                   % PORTS_MAX)
    p.add_argument("--socket-mem", type=int, default=512, metavar="MB",
                   help="DPDK memory, hugepages reserved for the run "
                   "(default: %(default)s)")
    p.add_argument("--hugepages", default="auto",
                   choices=("auto", "require", "off"),
                   help="auto: hugepages (the missing ones reserved for "
                   "the run and given back after it), else --no-huge; "
                   "require: fail without them; off: --no-huge")
    p.add_argument("--pmd-cpu-mask", default="0x2", metavar="MASK",
                   help="the PMD thread's cores; at least one core must "
                   "stay outside it (default: %(default)s)")
    p.add_argument("--dir", metavar="DIR",
                   help="the sandbox's directory (database, sockets, "
                   "logs), which must not exist or be empty; emptied or "
                   "removed at the exit (default: a new one in %s)"
                   % tempfile.gettempdir())
    p.add_argument("--keep", action="store_true",
                   help="keep the directory (its logs) after the exit")
    p.add_argument("-V", "--version", action="version",
                   version="%s %s" % (PROG, VERSION))
    return p


def split_command(argv: Sequence[str]) -> Tuple[List[str], List[str]]:
    """(the options, the command after the first "--")."""
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def check_args(p: argparse.ArgumentParser, args: Any) -> None:
    """Every argument in range, or p.error() (exit status 2)."""
    if not 0 <= args.ports <= PORTS_MAX:
        p.error("--ports %d: from 0 to %d (DPDK's limit of ethdev ports)"
                % (args.ports, PORTS_MAX))
    if not 64 <= args.socket_mem <= 65536:
        p.error("--socket-mem %d: from 64 to 65536 MB" % args.socket_mem)
    if not BRIDGE_RE.match(args.bridge):
        p.error("--bridge %r: a letter, then up to 14 letters, digits, "
                "'_', '.' or '-' (it is also a network device)"
                % args.bridge)
    try:
        pmd = parse_cpu_mask(args.pmd_cpu_mask)
    except ConfigError as e:
        p.error(str(e))
    usable = os.sched_getaffinity(0)
    if not set(pmd) <= usable:
        p.error("--pmd-cpu-mask %s: CPU %s is not one of this machine's "
                "usable CPUs (%s)" % (
                    args.pmd_cpu_mask,
                    ",".join(str(c) for c in sorted(set(pmd) - usable)),
                    ",".join(str(c) for c in sorted(usable))))
    if usable <= set(pmd):
        p.error("--pmd-cpu-mask %s: takes every CPU; the PMD busy-polls "
                "its cores, so leave one for the shell and the daemons"
                % args.pmd_cpu_mask)
    if args.dir is not None:
        args.dir = os.path.abspath(args.dir)
        if os.path.exists(args.dir) and (not os.path.isdir(args.dir)
                                         or os.listdir(args.dir)):
            p.error("--dir %s: exists and is not an empty directory"
                    % args.dir)


# ==================================================================== start
def _mounts_under(top: str) -> List[str]:
    """Mount points inside directory TOP (none must be when it is
    removed)."""
    top = os.path.realpath(top)
    out = []
    for line in read_text("/proc/mounts").splitlines():
        fields = line.split()
        if len(fields) > 1 and os.path.realpath(
                fields[1]).startswith(top + os.sep):
            out.append(fields[1])
    return out


def _remove_dir(path: str, keep_top: bool) -> None:
    """Removes PATH, or only what is in it if KEEP_TOP (a --dir that
    existed before)."""
    left = _mounts_under(path)
    if left:
        raise RunError("%s kept: still mounted: %s" % (path, " ".join(left)))
    if not keep_top:
        shutil.rmtree(path)
        return
    for name in os.listdir(path):
        sub = os.path.join(path, name)
        if os.path.isdir(sub) and not os.path.islink(sub):
            shutil.rmtree(sub)
        else:
            os.unlink(sub)


def make_workdir(args: Any, cleanup: Cleanup) -> str:
    """The sandbox's directory, removed at the end unless --keep."""
    if args.dir is None:
        path = os.path.join(tempfile.gettempdir(),
                            WORKDIR_FMT % os.getpid())
        if os.path.lexists(path):
            # Our pid's directory: a sandbox that had this pid and was
            # killed (its process is gone: it had our pid).
            for line in hugepages.give_back_stale(path):
                say("%s (a killed sandbox's)" % line)
            shutil.rmtree(path)
    else:
        path = args.dir
    existed = os.path.isdir(path)
    os.makedirs(path, exist_ok=True)
    if not args.keep:
        cleanup.push("remove " + path, lambda: _remove_dir(path, existed))
    return path


def dpdk_memory(args: Any, workdir: str,
                cleanup: Cleanup) -> Tuple[List[str], str]:
    """Hugepages reserved for the run (or --no-huge, said): the DPDK
    other_config settings and EAL arguments."""
    use = args.hugepages != "off"
    if use:
        why = hugepages.reserve(args.socket_mem,
                                os.path.join(workdir, "hugepages"), cleanup)
        if why is not None:
            if args.hugepages == "require":
                raise RunError("hugepages unavailable (--hugepages "
                               "require): %s" % why)
            say("%s: DPDK runs with --no-huge -m %d (slower)"
                % (why, args.socket_mem))
            use = False
    return hugepages.dpdk_memory_config(
        use, str(args.socket_mem), args.socket_mem,
        PREFIX_FMT % os.getpid(), cleanup)


def add_ports(sb: Sandbox, bridge: str, n: int) -> None:
    """Sink ports p1..pN on BRIDGE, OpenFlow ports 1..N, each created or
    the error its Interface row gives."""
    if n == 0:
        return
    cmd: List[str] = []
    for i in range(1, n + 1):
        name = "p%d" % i
        cmd += ["--", "add-port", bridge, name, "--", "set", "Interface",
                name, "type=dpdk",
                "options:dpdk-devargs=net_null%d,no-rx=1" % i,
                "ofport_request=%d" % i]
    sb.vsctl(*cmd, timeout=120)
    for name, row in sorted(sb.interfaces("name,ofport,error").items()):
        if row.get("error") not in (None, "", []):
            raise RunError("port %s: %s" % (name, row["error"]))


def link_unixctl(sb: Sandbox) -> None:
    """Lets "ovs-appctl" (without -t PATH) find the daemons: it reads
    $OVS_RUNDIR/NAME.pid (which the daemon writes and locks, --pidfile)
    and connects to $OVS_RUNDIR/NAME.PID.ctl."""
    for name, p in (("ovs-vswitchd", sb.vswitchd),
                    ("ovsdb-server", sb.ovsdb)):
        if p is not None:
            os.symlink(name + ".ctl",
                       os.path.join(sb.dir, "%s.%d.ctl" % (name, p.pid)))


def start(args: Any, cleanup: Cleanup) -> Sandbox:
    """The switch, its bridge and ports; every undo on CLEANUP."""
    bins = tree_binaries(os.path.abspath(args.ovs_build))
    why = bins.check()
    if why is not None:
        raise RunError("%s (is %s a built OVS tree? run 'make', or give "
                       "--ovs-build)" % (why, args.ovs_build))
    done, errors = hugepages.remove_stale_runs(WORKDIR_RE, PREFIX_RE)
    for line in done:
        say("%s (a killed sandbox's)" % line)
    for line in errors:
        say("cannot remove a killed sandbox's files: %s" % line)
    workdir = make_workdir(args, cleanup)
    memory, extra = dpdk_memory(args, workdir, cleanup)
    sb = Sandbox(bins, workdir, label=PROG)
    cleanup.push("stop ovs-vswitchd and ovsdb-server",
                 lambda: sb.stop(grace=20))
    say("starting ovsdb-server and ovs-vswitchd (DPDK, PMD on cores %s) "
        "in %s" % (args.pmd_cpu_mask, workdir))
    sb.start(dpdk_settings(args.pmd_cpu_mask, memory, "--no-pci " + extra),
             ovsdb_args=["--pidfile=" + os.path.join(workdir,
                                                     "ovsdb-server.pid")],
             vswitchd_args=["--pidfile=" + os.path.join(
                 workdir, "ovs-vswitchd.pid")])
    link_unixctl(sb)
    sb.add_bridge(args.bridge)
    add_ports(sb, args.bridge, args.ports)
    return sb


# ==================================================================== shell
def shell_env(sb: Sandbox, build: str) -> Dict[str, str]:
    """The shell's environment: the sandbox's directories and the built
    tree's tools first on PATH."""
    env = dict(sb.env)
    dirs = [os.path.join(build, d)
            for d in ("utilities", "vswitchd", "ovsdb")]
    daqctl = tool_path("ovs-daqctl")
    if daqctl is not None:
        dirs.append(os.path.dirname(daqctl))
    env["PATH"] = os.pathsep.join(dirs + [env.get("PATH", "")])
    env["OVS_DAQRING_SANDBOX"] = sb.dir
    env["PS1"] = PROMPT + env.get("PS1", r"\w\$ ")
    return env


def shell_command(sb: Sandbox, command: List[str]) -> List[str]:
    """COMMAND, or an interactive $SHELL (bash: with its usual rc file,
    then the sandbox's prompt)."""
    if command:
        return command
    shell = os.environ.get("SHELL") or "/bin/sh"
    if os.path.basename(shell) == "bash":
        rc = os.path.join(sb.dir, "bashrc")
        with open(rc, "w") as f:
            f.write('[ -f ~/.bashrc ] && . ~/.bashrc\nPS1="%s$PS1"\n'
                    % PROMPT)
        return [shell, "--rcfile", rc, "-i"]
    return [shell]


def banner(args: Any, sb: Sandbox) -> str:
    ports = ("sink port p1" if args.ports == 1 else
             "sink ports p1..p%d" % args.ports if args.ports else
             "no ports")
    return "\n".join([
        "-" * 72,
        "%s: ovs-vswitchd (%s) runs with DPDK, PMD on cores %s;"
        % (PROG, sb.bin.origin, args.pmd_cpu_mask),
        "bridge %s (datapath_type=netdev), %s." % (args.bridge, ports),
        "ovs-vsctl, ovs-ofctl, ovs-appctl and ovs-daqctl talk to it; its "
        "files,",
        "logs included, are in $OVS_RUNDIR (%s)." % sb.dir,
        "Exit the shell to stop the switch and give its hugepages back.",
        "-" * 72, ""])


def _stop_child(child: "subprocess.Popen[bytes]") -> None:
    """SIGHUP (an interactive shell ignores SIGTERM), then SIGKILL."""
    if child.poll() is not None:
        return
    try:
        child.send_signal(signal.SIGHUP)
        child.wait(5)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait(5)
    except ProcessLookupError:
        pass


def run_shell(args: Any, sb: Sandbox, command: List[str]) -> int:
    """Runs the shell or COMMAND in the foreground until it exits; its
    exit status (128 + N for signal N)."""
    cmd = shell_command(sb, command)
    if not command:
        sys.stderr.write(banner(args, sb))
        sys.stderr.flush()
    # Ctrl-C belongs to the shell (it is in the terminal's foreground
    # group with us): a handler that does nothing, which exec resets to
    # the default in the child, unlike SIG_IGN.
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        child = subprocess.Popen(cmd, env=shell_env(
            sb, os.path.abspath(args.ovs_build)),
            preexec_fn=die_with_parent)
    except OSError as e:
        raise RunError("%s: %s" % (cmd[0], e))
    try:
        rc = child.wait()
    finally:
        _stop_child(child)
    return 128 - rc if rc < 0 else rc


# ===================================================================== main
def say(text: str) -> None:
    sys.stderr.write("%s: %s\n" % (PROG, text))
    sys.stderr.flush()


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted(signum)


def main(argv: Optional[List[str]] = None) -> int:
    p = build_parser()
    opts, command = split_command(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(opts)
    check_args(p, args)
    if os.geteuid() != 0:
        p.error("needs root: DPDK, its hugepages and their mount")
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _interrupt)
    cleanup = Cleanup()
    rc = 1
    started = False
    try:
        sb = start(args, cleanup)
        started = True
        rc = run_shell(args, sb, command)
    except Interrupted as e:
        say("interrupted by signal %d" % e.signum)
        rc = 128 + e.signum
    except (RunError, OSError) as e:
        say(str(e))
    finally:
        if started:
            say("stopping the switch, giving its hugepages back")
        failures = cleanup.run()
    if failures:
        say("not everything was undone (see above)")
        return rc or 1
    if args.keep:
        kept = args.dir
        if kept is None:
            # Renamed: the next sandbox removes what WORKDIR_RE matches.
            kept = os.path.join(tempfile.gettempdir(),
                                KEPT_FMT % os.getpid())
            try:
                os.rename(os.path.join(tempfile.gettempdir(),
                                       WORKDIR_FMT % os.getpid()), kept)
            except OSError as e:
                say("cannot rename the directory: %s" % e)
                return rc or 1
        say("its files are kept in %s" % kept)
    return rc
