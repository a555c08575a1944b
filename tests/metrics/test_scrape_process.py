# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The scrape process (metrics/server.py): a scrape is served by a
process that never takes in the database or renders, from the last whole
exposition.  So a scrape is answered while the daemon's main process is
stopped, or while its interpreter is held by a long call; the process
dies with the daemon, and a daemon whose process died is restarted by
--monitor (pidfile and control socket kept); an exposition handed over
in part is never served.  (The timeouts bound a hang; no test measures
a duration.)"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

pytest.importorskip("prometheus_client",
                    reason="needs python3-prometheus-client")

from ovs_daqring.process import die_with_parent, stop_process  # noqa: E402

from fabric_helpers import free_ports, wait_for  # noqa: E402

TOP = Path(__file__).resolve().parent.parent.parent
EXPORTER = TOP / "utilities" / "ovs-daqring-exporter"
AGENT = TOP / "utilities" / "ovs-daqfabric-agent"
OVS = TOP / "ovs"
SCHEMA = OVS / "vswitchd" / "vswitch.ovsschema"
PYTHON = "/usr/bin/python3"
# A bound on a hang, not a timing.
SCRAPE_TIMEOUT_S = 10
WAIT_S = 60
OPENMETRICS = "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"
RINGS = ["r%d" % i for i in range(20)]


def tool(name: str) -> str:
    for d in ("ovsdb", "utilities"):
        p = OVS / d / name
        if p.is_file() and os.access(str(p), os.X_OK):
            return str(p)
    found = shutil.which(name)
    if not found:
        pytest.skip("%s not found (build ovs/)" % name)
    return found


def free_port() -> int:
    return free_ports(1)[0]


def scrape(url: str, accept: str = OPENMETRICS) -> bytes:
    req = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(req, timeout=SCRAPE_TIMEOUT_S) as r:
        return bytes(r.read())


def try_scrape(url: str) -> Optional[bytes]:
    try:
        return scrape(url)
    except OSError:
        return None


def whole(body: bytes, rings: List[str]) -> bool:
    """BODY is one whole exposition of the bare database's rings."""
    return (body.endswith(b"# EOF\n")
            and b"daqring_exporter_ovsdb_up 1.0" in body
            and all(('ring="%s"' % r).encode() in body for r in rings)
            and body.count(b"# EOF") == 1)


def steady(body: bytes) -> List[bytes]:
    """BODY but the age of the PMD reading (it grows)."""
    return [ln for ln in body.split(b"\n")
            if not ln.startswith(b"daqring_exporter_pmd_reading_age")]


def children(pid: int) -> List[int]:
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def gone(pid: int) -> bool:
    """PID exited (a zombie of a parent that does not reap it counts)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except OSError:
        return True


@pytest.fixture
def bare_db() -> Iterator[Dict[str, Any]]:
    """ovsdb-server with the Open_vSwitch schema and RINGS (daqring rows
    with statistics), no ovs-vswitchd."""
    if not SCHEMA.exists():
        pytest.skip("needs the OVS schema (build ovs/)")
    d = tempfile.mkdtemp(prefix="daqscrapes-")
    sock = os.path.join(d, "db.sock")
    subprocess.run([tool("ovsdb-tool"), "create", os.path.join(d, "conf.db"),
                    str(SCHEMA)], check=True)
    server = subprocess.Popen(
        [tool("ovsdb-server"), os.path.join(d, "conf.db"),
         "--remote=punix:" + sock,
         "--unixctl=" + os.path.join(d, "ovsdb-server.ctl"),
         "--log-file=" + os.path.join(d, "ovsdb-server.log"),
         "-vconsole:off"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
    try:
        wait_for(lambda: os.path.exists(sock), "ovsdb-server's socket", 20)
        args = ["init", "--", "add-br", "br0"]
        for i, r in enumerate(RINGS):
            args += ["--", "add-port", "br0", r, "--", "set", "Interface",
                     r, "type=daqring",
                     "statistics={tx_packets=%d,rx_packets=%d}" % (i, i)]
        subprocess.run([tool("ovs-vsctl"), "--db=unix:" + sock, "--no-wait",
                        "--timeout=30"] + args, check=True,
                       capture_output=True, timeout=60)
        yield {"db": "unix:" + sock, "dir": d}
    finally:
        stop_process(server)
        shutil.rmtree(d, ignore_errors=True)


def start_exporter(db: Dict[str, Any], *more: str
                   ) -> "subprocess.Popen[bytes]":
    port = free_port()
    d = db["dir"]
    p = subprocess.Popen(
        [PYTHON, str(EXPORTER), "--db", db["db"],
         "--metrics-address", "127.0.0.1:%d" % port,
         "--unixctl=" + os.path.join(d, "exporter.ctl"),
         "--log-file=" + os.path.join(d, "exporter.log"),
         "--vswitchd", os.path.join(d, "no-vswitchd.ctl"),
         "-vconsole:off"] + list(more),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=die_with_parent)
    db["url"] = "http://127.0.0.1:%d/metrics" % port
    return p


def log(db: Dict[str, Any]) -> str:
    try:
        return Path(db["dir"], "exporter.log").read_text()[-3000:]
    except OSError:
        return ""


def serving(db: Dict[str, Any]) -> bytes:
    def ok() -> Optional[bytes]:
        body = try_scrape(db["url"])
        return body if body is not None and whole(body, RINGS) else None
    try:
        return bytes(wait_for(ok, "the exporter to serve every ring"))
    except AssertionError:
        raise AssertionError(log(db))


def test_a_scrape_is_answered_while_the_daemon_is_stopped(
        bare_db: Dict[str, Any]) -> None:
    """The exporter's main process stopped (SIGSTOP: no IDL, no render,
    no Python of its own runs): scrapes are answered, whole, in both
    formats, by the scrape process.  Before, the HTTP server was a
    thread of the main process, and the scrape hung."""
    p = start_exporter(bare_db)
    try:
        first = serving(bare_db)
        os.kill(p.pid, signal.SIGSTOP)
        try:
            for _ in range(3):
                assert steady(scrape(bare_db["url"])) == steady(first)
            text = scrape(bare_db["url"], "text/plain")
            assert b"# EOF" not in text
            assert all(('ring="%s"' % r).encode() in text for r in RINGS)
        finally:
            os.kill(p.pid, signal.SIGCONT)
    finally:
        stop_process(p)


def test_the_scrape_process_dies_with_the_daemon(
        bare_db: Dict[str, Any]) -> None:
    """One child of the daemon, the scrape process; the daemon killed
    (SIGKILL: no clean-up of its own), the process exits and the address
    serves no more."""
    p = start_exporter(bare_db)
    try:
        serving(bare_db)
        kids = children(p.pid)
        assert len(kids) == 1, kids
        with open("/proc/%d/comm" % kids[0]) as f:
            assert f.read().strip() == "daqring-scrapes"
        p.kill()
        p.wait(WAIT_S)
        wait_for(lambda: gone(kids[0]), "the scrape process to exit")
        assert try_scrape(bare_db["url"]) is None
    finally:
        stop_process(p)


def test_exit_stops_both(bare_db: Dict[str, Any]) -> None:
    """ovs-appctl exit: the daemon exits (status 0) and its scrape
    process with it."""
    p = start_exporter(bare_db)
    try:
        serving(bare_db)
        kids = children(p.pid)
        assert len(kids) == 1, kids
        subprocess.run([tool("ovs-appctl"), "-t",
                        os.path.join(bare_db["dir"], "exporter.ctl"),
                        "exit"], check=True, timeout=60)
        assert p.wait(WAIT_S) == 0
        wait_for(lambda: gone(kids[0]), "the scrape process to exit")
    finally:
        stop_process(p)


def test_the_scrape_processs_lines_follow_a_rotated_log(
        bare_db: Dict[str, Any]) -> None:
    """The scrape process's log lines (its PMD readings failing: no
    ovs-vswitchd here) are the daemon's: after the log is rotated
    (renamed, then vlog/reopen), a new line goes to the new file.
    Before, the process wrote to the file it had inherited, the rotated
    one, for good."""
    d = bare_db["dir"]
    path = Path(d, "exporter.log")
    ctl = os.path.join(d, "exporter.ctl")

    def relayed(f: Path) -> List[str]:
        try:
            return [ln for ln in f.read_text().splitlines()
                    if "no-vswitchd.ctl: " in ln]
        except OSError:
            return []

    def scraped_then_relayed() -> List[str]:
        # A reading's failure is logged by the scrape that serves it,
        # one after the scrape that asked for it (it never waits): so
        # scrape until the line comes.
        try_scrape(bare_db["url"])
        return relayed(path)

    p = start_exporter(bare_db)
    try:
        serving(bare_db)
        first = wait_for(scraped_then_relayed,
                         "the scrape process's first line")
        os.rename(path, str(path) + ".1")
        subprocess.run([tool("ovs-appctl"), "-t", ctl, "vlog/reopen"],
                       check=True, timeout=60)
        # Another failure (the control socket's path a file now): the
        # process says so once.
        Path(d, "no-vswitchd.ctl").write_text("")
        got = wait_for(scraped_then_relayed,
                       "the scrape process's next line")
        assert got[0] not in first, (first, got)
        assert relayed(Path(str(path) + ".1")) == first
    finally:
        stop_process(p)


def test_detached_monitored_daemon(bare_db: Dict[str, Any]) -> None:
    """--detach --monitor --pidfile: the scrape process is the daemon's
    child; when it dies the daemon exits to be restarted by the monitor,
    whose new daemon (in the pidfile) serves again through a new scrape
    process; ovs-appctl exit ends all of them."""
    pidfile = os.path.join(bare_db["dir"], "exporter.pid")
    ctl = os.path.join(bare_db["dir"], "exporter.ctl")
    p = start_exporter(bare_db, "--detach", "--monitor",
                       "--pidfile=" + pidfile)
    detached_monitored(p, pidfile, ctl, lambda: serving(bare_db),
                       lambda: log(bare_db))


def test_detached_monitored_fabric_agent(tmp_path: Path) -> None:
    """The same for ovs-daqfabric-agent --metrics-address (the node's
    metrics; no switch behind its --ovsdb here, which its metrics say)."""
    from fabric_helpers import Cluster
    d = str(tmp_path)
    pidfile, ctl = d + "/agent.pid", d + "/agent.ctl"
    url = "http://127.0.0.1:%d/metrics" % free_port()
    cluster = Cluster(1)
    try:
        p = subprocess.Popen(
            [PYTHON, str(AGENT), "--node", "spine1", "--db",
             cluster.remotes(), "--ovsdb", "unix:%s/none.sock" % d,
             "--state-file", d + "/state.json",
             "--metrics-address", url.split("/")[2],
             "--unixctl=" + ctl, "--log-file=" + d + "/agent.log",
             "-vconsole:off", "--detach", "--monitor",
             "--pidfile=" + pidfile],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent)

        def agent_log() -> str:
            try:
                return Path(d, "agent.log").read_text()[-3000:]
            except OSError:
                return ""

        def agent_serving() -> None:
            def ok() -> bool:
                body = try_scrape(url)
                return body is not None and \
                    b'daqfabric_node_applies_total{node="spine1"}' in body
            try:
                wait_for(ok, "the agent to serve its node's metrics")
            except AssertionError:
                raise AssertionError(agent_log())
        detached_monitored(p, pidfile, ctl, agent_serving, agent_log)
    finally:
        cluster.stop()


def detached_monitored(p: "subprocess.Popen[bytes]", pidfile: str,
                       ctl: str, serving: Callable[[], Any],
                       log: Callable[[], str]) -> None:
    """P, a daemon started with --detach --monitor --pidfile=PIDFILE
    --unixctl=CTL: once detached (P exits 0) it serves (SERVING()); its
    scrape process killed, the monitor restarts it and the new daemon
    serves; ovs-appctl exit then ends every one of them."""
    pids: List[int] = []
    try:
        assert p.wait(WAIT_S) == 0, log()
        serving()
        daemon = int(Path(pidfile).read_text())
        pids.append(daemon)
        kids = children(daemon)
        assert len(kids) == 1, kids
        pids += kids
        os.kill(kids[0], signal.SIGKILL)

        def restarted() -> Optional[int]:
            try:
                pid = int(Path(pidfile).read_text())
            except (OSError, ValueError):
                return None
            return pid if pid != daemon and children(pid) else None
        new = wait_for(restarted, "the monitor to restart the daemon")
        pids.append(new)
        pids += children(new)
        serving()
        assert os.path.exists(ctl)
        subprocess.run([tool("ovs-appctl"), "-t", ctl, "exit"], check=True,
                       timeout=60)
        for pid in pids:
            wait_for(lambda: gone(pid), "pid %d to exit" % pid)
    finally:
        for pid in pids:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
        # The monitor (the daemon's parent).
        for line in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if pidfile.encode() in line.read_bytes() \
                        and int(line.parent.name) != os.getpid():
                    os.kill(int(line.parent.name), signal.SIGKILL)
            except (OSError, ValueError):
                pass


# A daemon of the library's own (the agent's way: a collector, serve(),
# Served) whose main thread then holds the interpreter in one long call.
HOLDER = r"""
import re, sys, threading
sys.path.insert(0, %(python)r)
from ovs_daqring.metrics.collector import DaqringCollector
from ovs_daqring.metrics.rings import RingReading
from ovs_daqring.metrics.server import Served, serve

def read():
    return [RingReading(bridge="br0", ring="r%%d" %% i, dcm="d",
                        statistics={"tx_packets": i}, status={})
            for i in range(%(n)d)]
c = DaqringCollector(read, version=lambda: 1)
class Idle:
    exiting = False
    def run(self):
        with c.lock:
            c.poke()
d = Served(Idle(), serve(c, "127.0.0.1", %(port)d))
d.run()
while c.published is None:
    threading.Event().wait(0.05)
threading.Event().wait(0.5)
print("holding", flush=True)
# One call that never gives the interpreter up (catastrophic
# backtracking in the C regex engine): the GIL is held until killed.
re.match(r"(a+)+$", "a" * 64 + "b")
"""


def test_a_scrape_while_the_daemons_interpreter_is_held() -> None:
    """The daemon's main thread in one long call that never releases the
    GIL (as the IDL's parse of thousands of rows does for a tenth of a
    second): a scrape is answered, whole.  Before, the HTTP thread
    waited for the GIL."""
    port = free_port()
    p = subprocess.Popen(
        [PYTHON, "-c", HOLDER % {"python": str(TOP / "python"),
                                 "port": port, "n": 50}],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=die_with_parent)
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        assert line == b"holding\n", p.stderr.read() if p.stderr else b""
        body = scrape("http://127.0.0.1:%d/metrics" % port)
        assert whole(body, ["r%d" % i for i in range(50)])
    finally:
        p.kill()
        p.wait(WAIT_S)


# ---------------------------------------------------------- the hand-over
def test_an_exposition_is_never_served_torn() -> None:
    """The scrape process's side of the hand-over (server.receive(),
    Scrapes): while a frame has come only in part, the previous
    exposition is served whole; the new one once all of it has come;
    and at the end of the socket pair mid-frame, nothing of it ever."""
    from prometheus_client.exposition import choose_encoder
    from ovs_daqring.metrics.collector import Rendered
    from ovs_daqring.metrics.server import Scrapes, pack, receive
    om = choose_encoder(OPENMETRICS)[1]
    txt = choose_encoder("text/plain")[1]

    def expo(n: int) -> Rendered:
        body = b"".join(b'daqring_info{bridge="br0",ring="r%d"} %d\n'
                        % (i, n) for i in range(2000))
        return Rendered(None, None, {om: body, txt: body}, n, 0.5,
                        {om: b"extra %d\n" % n, txt: b"extra %d\n" % n})
    scrapes = Scrapes()
    mine, theirs = socket.socketpair()
    done: List[Optional[Rendered]] = []

    def receiver() -> None:
        while True:
            pub = receive(theirs)
            if pub is None:
                done.append(None)
                return
            scrapes.swap(pub)
            done.append(pub)
    t = threading.Thread(target=receiver, daemon=True)
    t.start()
    try:
        mine.sendall(b"".join(pack(expo(1))))
        wait_for(lambda: len(done) == 1, "the first exposition", 20)
        first, _ = scrapes.render(OPENMETRICS)
        assert first.count(b"\"} 1\n") == 2000 and b"extra 1" in first
        frame = b"".join(pack(expo(2)))
        for part in (frame[:3], frame[3:len(frame) // 2],
                     frame[len(frame) // 2:-1]):
            mine.sendall(part)
            # (Time for a receiver that would swap in a part: none does.)
            time.sleep(0.1)
            assert len(done) == 1
            assert scrapes.render(OPENMETRICS)[0] == first
        mine.sendall(frame[-1:])
        wait_for(lambda: len(done) == 2, "the second exposition", 20)
        second, _ = scrapes.render(OPENMETRICS)
        assert second.count(b"\"} 2\n") == 2000 and b"extra 2" in second
        text, ctype = scrapes.render("text/plain")
        assert ctype == txt and b"# EOF" not in text
        # Cut short: never served.
        mine.sendall(b"".join(pack(expo(3)))[:5000])
        mine.close()
        t.join(20)
        assert done[-1] is None
        assert scrapes.render(OPENMETRICS)[0] == second
    finally:
        mine.close()
        theirs.close()


def test_only_the_other_collectors_changed() -> None:
    """The fabric node's series change alone (every second, some): the
    frame carries them, not the daqrings' megabytes again, and the
    scrape process serves the daqrings' texts it has with them."""
    from prometheus_client.exposition import choose_encoder
    from ovs_daqring.metrics.collector import Rendered
    from ovs_daqring.metrics.server import Scrapes, pack, receive
    om = choose_encoder(OPENMETRICS)[1]
    texts = {om: b'daqring_info{bridge="br0",ring="r1"} 1\n'}
    first = Rendered(None, None, texts, 0, 0.1, {om: b"node 1\n"})
    second = Rendered(None, None, texts, 0, 0.1, {om: b"node 2\n"})
    full, short = pack(first), pack(second, same_texts=True)
    assert texts[om] in full and texts[om] not in short
    mine, theirs = socket.socketpair()
    try:
        mine.sendall(b"".join(full + short))
        scrapes = Scrapes()
        got = receive(theirs, scrapes.published)
        assert got is not None
        scrapes.swap(got)
        got = receive(theirs, scrapes.published)
        assert got is not None
        scrapes.swap(got)
        body, _ = scrapes.render(OPENMETRICS)
        assert texts[om] in body and b"node 2" in body
        assert b"node 1" not in body
    finally:
        mine.close()
        theirs.close()


if __name__ == "__main__":           # pragma: no cover
    sys.exit(pytest.main([__file__]))


def test_the_scrape_processs_lines_relayed_whole_or_in_pieces() -> None:
    """LogRelay's relay: whole lines as they complete, one longer than
    MAX_LINE in pieces of MAX_LINE (not one piece of up to twice that),
    and, once the process is gone (nothing more to read), the line it
    left unterminated (before, it was never logged)."""
    from ovs_daqring.metrics import server
    logged: List[str] = []
    relay = object.__new__(server.ScrapeServer)
    relay.partial_line = b""
    relay.log = logged.append
    relay.relay_lines(b"one\ntw")
    relay.relay_lines(b"o\n" + b"x" * (server.MAX_LINE - 10))
    assert logged == [server.LOG_PREFIX + "one", server.LOG_PREFIX + "two"]
    relay.relay_lines(b"y" * (2 * server.MAX_LINE))
    pieces = [line[len(server.LOG_PREFIX):] for line in logged[2:]]
    assert [len(p) for p in pieces] == [server.MAX_LINE, server.MAX_LINE]
    assert pieces[0] == "x" * (server.MAX_LINE - 10) + "y" * 10
    relay.relay_lines(b"")
    rest = logged[4][len(server.LOG_PREFIX):]
    assert len(logged) == 5 and rest == "y" * (server.MAX_LINE - 10)
    relay.relay_lines(b"")
    assert len(logged) == 5
