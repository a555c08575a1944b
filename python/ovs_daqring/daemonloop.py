# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What our daemons (ovs-daqfabric-agent, ovs-daqring-exporter) share of
an OVS daemon's life: the main loop over a unixctl server and the
daemon's own work, and the exit status that makes --monitor restart a
daemon that failed (as the C daemons' main loops and ovs.daemon's
monitor do)."""

from typing import Any, Callable

import ovs.daemon
import ovs.poller


def serve(server: Any, daemon: Any) -> None:
    """Runs 'server' (an ovs.unixctl server) and 'daemon' (an object with
    run(), wait(poller), close() and 'exiting') until the daemon is
    exiting, blocking in between on what either waits for; closes both
    after."""
    try:
        while not daemon.exiting:
            server.run()
            if daemon.exiting:
                break
            daemon.run()
            poller = ovs.poller.Poller()
            server.wait(poller)
            daemon.wait(poller)
            poller.block()
    finally:
        daemon.close()
        server.close()


def restarting(main: Callable[[], int], vlog: Any) -> int:
    """main()'s exit status; a traceback logged (on 'vlog') and
    ovs.daemon.RESTART_EXIT_CODE, which --monitor restarts the daemon on,
    when it raised; 130 on Ctrl-C."""
    try:
        return main()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        return 130
    except Exception:               # noqa: B902 -- logged, then restarted
        vlog.exception("traceback")
        return ovs.daemon.RESTART_EXIT_CODE
