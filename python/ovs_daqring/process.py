"""Running commands and undoing everything that was done."""

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import sys
from typing import (Any, Callable, Dict, Iterator, List, Optional, Sequence,
                    Tuple)


class RunError(Exception):
    """A command or a daemon failed; exit status 1."""


def run(cmd: Sequence[str], check: bool = True, timeout: float = 60,
        env: Optional[Dict[str, str]] = None, input: Optional[str] = None
        ) -> str:
    """Run cmd, return its stdout; raise RunError with stderr on failure."""
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True,
                           timeout=timeout, env=env, input=input)
    except subprocess.TimeoutExpired:
        raise RunError("%s: timed out after %g s" % (" ".join(cmd), timeout))
    except OSError as e:
        raise RunError("%s: %s" % (cmd[0], e))
    if check and p.returncode != 0:
        raise RunError("%s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                            p.stderr.strip()[-2000:]))
    return p.stdout


def read_text(path: str, default: str = "") -> str:
    """The contents of a (small) file, or DEFAULT if it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def die_with_parent() -> None:
    """preexec_fn for every daemon and agent we start: SIGTERM them if
    daq-incast itself dies, even by SIGKILL (PR_SET_PDEATHSIG survives
    the exec of `ip netns exec` and of the program it runs)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)              # PR_SET_PDEATHSIG


def stop_process(p: "subprocess.Popen[Any]", grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL, one process we started (by its pid)."""
    if p.poll() is not None:
        return
    try:
        p.terminate()
        p.wait(grace)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(5)
    except ProcessLookupError:
        pass


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP ignored within: a clean-up that must not
    be cut short (by the main thread only)."""
    old = {s: signal.signal(s, signal.SIG_IGN)
           for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


class Interrupted(BaseException):
    """SIGINT/SIGTERM/SIGHUP or the --timeout alarm."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class Cleanup:
    """A stack of undo actions run in reverse order exactly once, whether
    the run ends normally, by exception, by signal or at interpreter exit.
    Signals are ignored while it runs so that a second Ctrl-C cannot leave
    half the topology behind."""

    def __init__(self) -> None:
        self._stack: List[Tuple[str, Callable[[], None]]] = []
        self.failures: List[str] = []

    def push(self, what: str, fn: Callable[[], None]) -> None:
        self._stack.append((what, fn))

    def run(self) -> List[str]:
        if not self._stack:
            return self.failures
        with signals_held():
            signal.alarm(0)
            while self._stack:
                what, fn = self._stack.pop()
                try:
                    fn()
                except Exception as e:       # keep undoing the rest
                    self.failures.append("%s: %s" % (what, e))
                    sys.stderr.write("%s: cleanup: %s: %s\n" % (
                        os.path.basename(sys.argv[0]), what, e))
        return self.failures


def install_signal_handlers(timeout_s: float) -> None:
    def handler(signum: int, frame: object) -> None:
        raise Interrupted(signum)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM):
        signal.signal(s, handler)
    signal.alarm(max(1, int(timeout_s)))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


STALE_RE = re.compile(r"^dqi(\d+)-(sw|dcm\d+|ros\d+)$")
# daq-bench's switches: dqb<pid>-<n>, namespace and DPDK file prefix.
STALE_BENCH_RE = re.compile(r"^dqb(\d+)-\d+$")


def stale_namespaces(names: List[str],
                     pattern: "re.Pattern[str]" = STALE_RE) -> List[str]:
    """Namespaces of earlier daq-incast runs (or those PATTERN matches,
    group 1 the pid) whose process is gone."""
    out = []
    for name in names:
        m = pattern.match(name)
        if m and not pid_alive(int(m.group(1))):
            out.append(name)
    return out
