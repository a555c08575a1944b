# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The command-line options every executable of ours that talks to an
OVSDB or OpenFlow remote shares, as OVS's C has STREAM_SSL_OPTION_HANDLERS:
one definition of the SSL options and of the check that ssl: remotes have
them."""

import argparse
from typing import Any, Iterable, Optional

SSL_FILES_NEEDED = ("ssl: remotes need --private-key, --certificate and "
                    "--ca-cert (see ovs-pki(8))")


def add_ssl_options(p: Any, hidden: bool = False) -> None:
    """--private-key/-p, --certificate/-c, --ca-cert/-C on parser P: in
    an "SSL Options" group; or, with HIDDEN (options that may also follow
    a subcommand), on P itself without help or defaults of their own."""
    kw: dict = {}
    if hidden:
        kw = {"default": argparse.SUPPRESS, "help": argparse.SUPPRESS}
        g = p
    else:
        g = p.add_argument_group(title="SSL Options")
    g.add_argument("--private-key", "-p", metavar="FILE",
                   **(kw or {"help": "SSL private key (ssl: remotes)"}))
    g.add_argument("--certificate", "-c", metavar="FILE",
                   **(kw or {"help": "SSL certificate"}))
    g.add_argument("--ca-cert", "-C", metavar="FILE",
                   **(kw or {"help": "SSL CA certificate"}))


def ssl_missing(args: argparse.Namespace,
                remotes: Iterable[Optional[str]]) -> bool:
    """Whether one of REMOTES (each None, a remote or a comma-separated
    list of them) is ssl: while ARGS lack one of the SSL files (the
    library would only time out)."""
    ssl = any(r.strip().startswith("ssl:")
              for rs in remotes if rs for r in rs.split(","))
    return ssl and not all(getattr(args, k, None) for k in
                           ("private_key", "certificate", "ca_cert"))
