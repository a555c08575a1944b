# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The summary after a daq-incast run: the table of its mode runs,
the fabric's account of its frames, the notes, the JSON results and the
plots, and the run's exit status."""

import json
import sys
from typing import Any, Dict, List, Sequence

from .config import Config
from .fabric.summary import format_fabric
from .stats import format_shared, format_table, validate_results


def cc_line(doc: Dict[str, Any]) -> str:
    """The TCP congestion control the hosts ran, for the summary."""
    cc = doc.get("topology", {}).get("congestion_control")
    if not cc:
        return ""
    hosts = cc.get("hosts", {})
    got = sorted(set(hosts.values()))
    if got == [cc.get("configured")]:
        return ("TCP congestion control: %s in all %d host namespaces"
                % (got[0], len(hosts)))
    return ("TCP congestion control: %s configured; hosts: %s"
            % (cc.get("configured"), ", ".join(
                "%s %s" % kv for kv in sorted(hosts.items())) or "none"))


def failed_runs(doc: Dict[str, Any]) -> List[str]:
    """'label: error' of every mode run of DOC that did not finish."""
    return ["%s: %s" % (m.get("label"), m.get("error") or m.get("status"))
            for m in doc.get("modes", []) if m.get("status") != "ok"]


def report(doc: Dict[str, Any], cfg: Config, ideal_bps: float,
           notes: Sequence[str], rc: int = 0) -> int:
    """Prints the table and the notes, writes the JSON and the plots of
    DOC; the exit status: RC, or 1 if a mode run failed (a failed run is
    never a result) or the results do not match the schema."""
    print()
    print(format_table(doc["modes"], ideal_bps))
    shared = format_shared(doc["modes"])
    if shared:
        print(shared)
    if cc_line(doc):
        print(cc_line(doc))
    if doc.get("topology", {}).get("kind") == "fabric":
        text = format_fabric(doc)
        if text:
            print(text)
    for note in notes:
        print("note: " + note)
    errors = validate_results(doc)
    if errors:
        sys.stderr.write("daq-incast: internal: results do not match the "
                         "schema: %s\n" % "; ".join(errors))
        rc = 1
    if cfg.json_path:
        with open(cfg.json_path, "w") as f:
            json.dump(doc, f, indent=1)
        print("results: %s" % cfg.json_path)
    if cfg.plot_dir:
        from .plot import write_plots
        for path in write_plots(doc, cfg.plot_dir):
            print("plot: %s" % path)
    failed = failed_runs(doc)
    if failed:
        sys.stderr.write("daq-incast: error: %d of %d mode run(s) failed "
                         "(their results are not counted): %s\n"
                         % (len(failed), len(doc["modes"]),
                            "; ".join(failed)))
        rc = rc or 1
    return rc
