# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The executables' entry points, one module each, named after the
executable (ovs-daqctl: cmd/ovs_daqctl.py): each holds the program's one
argument parser and its main(), above every library package it drives.
utilities/ holds the thin scripts that call them."""
