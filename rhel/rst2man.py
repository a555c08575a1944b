#! /usr/bin/python3
# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Render one of our Documentation/ pages as a man page (docutils).

Usage: rst2man.py SOURCE.rst OUTPUT [NAME SECTION SUMMARY]

With NAME, SECTION and SUMMARY, the page's own title is replaced by the
man page's NAME line ("NAME - SUMMARY"); its introduction becomes
DESCRIPTION and its sections follow.  Used by the RPM spec to make
ovs-daqring(7) from Documentation/topics/daqring.rst.  Without them,
SOURCE is a man page already (utilities/ovs-daqctl.8.rst) and is
rendered as it is, strictly, like "rst2man --strict".
"""

import io
import re
import sys

from docutils.core import publish_file


def main(argv):
    if len(argv) == 3:
        publish_file(source_path=argv[1], destination_path=argv[2],
                     writer_name='manpage',
                     settings_overrides={'halt_level': 2})
        return
    if len(argv) != 6:
        sys.exit(__doc__.strip().splitlines()[2])
    source, output, name, section, summary = argv[1:]
    with open(source, encoding='utf-8') as f:
        text = f.read()
    # Drop everything up to and including the document title (a line of
    # "=" above and below it): the license comment and the title.
    m = re.search(r'^(=+)\n[^\n]+\n\1\n', text, re.M)
    if not m:
        sys.exit('rst2man: %s: no document title' % source)
    body = text[m.end():]
    head = ('{o}\n{name}\n{o}\n\n{u}\n{summary}\n{u}\n\n'
            ':Manual section: {section}\n'
            ':Manual group: Open vSwitch\n\n'
            'Description\n-----------\n').format(
                o='=' * len(name), name=name, u='-' * len(summary),
                summary=summary, section=section)
    with open(output, 'w', encoding='utf-8') as out:
        publish_file(source=io.StringIO(head + body), destination=out,
                     writer_name='manpage',
                     settings_overrides={'report_level': 3,
                                         'halt_level': 3})


if __name__ == '__main__':
    main(sys.argv)
