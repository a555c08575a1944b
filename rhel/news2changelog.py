#! /usr/bin/python3
# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Print an RPM %changelog body made from NEWS.

Usage: news2changelog.py NEWS "NAME <EMAIL>" FALLBACK-DATE [VERSION]

Every release section of NEWS ("v3.1.0-daq1 - 21 Nov 2026", underlined
with dashes, then "- item" lines) becomes one entry, newest first as in
NEWS, whose version-release is the section's version without its "v".
Sections without a release line ("Post-v3.1.0-daq1", work in progress)
are left out.  A release whose date is not set yet ("xx xxx 2026") gets
FALLBACK-DATE (YYYY-MM-DD; "make rpm" passes the date of the last
commit).

VERSION is the version-release of the package being built.  The RPMs are
built on base 3.5 (3.5.0-daq1) while NEWS's releases are on 3.1.0: when no
release section has VERSION, an entry for it dated FALLBACK-DATE comes
first, naming the newest release it carries.
"""

import datetime
import re
import sys

RELEASE = re.compile(r'^v(\S+) - (.*\S)\s*$')


def parse_date(text, fallback):
    for fmt in ('%d %b %Y', '%d %B %Y'):
        try:
            return datetime.datetime.strptime(text, fmt).date()
        except ValueError:
            pass
    return fallback


def releases(lines):
    """Yields (version, date text, [body lines]) per release section."""
    i = 0
    while i < len(lines):
        m = RELEASE.match(lines[i])
        if m and i + 1 < len(lines) and re.match(r'^-{3,}\s*$', lines[i + 1]):
            body = []
            i += 2
            while i < len(lines):
                if (i + 1 < len(lines) and lines[i].strip()
                        and re.match(r'^-{3,}\s*$', lines[i + 1])):
                    break
                body.append(lines[i].rstrip())
                i += 1
            yield m.group(1), m.group(2), body
        else:
            i += 1


def entry(body):
    """The section's items as changelog lines: "- item", continuation
    lines indented by two spaces."""
    items = [line for line in body if line.strip()]
    if not items:
        return ['- No user-visible changes.']
    indent = min(len(line) - len(line.lstrip()) for line in items
                 if line.lstrip().startswith(('-', '*')))
    out = []
    for line in items:
        text = line[indent:] if len(line) >= indent else line.lstrip()
        if not text.startswith('-'):
            text = '  ' + text.strip() if not text.startswith(' ') else text
        # rpm expands macros in %changelog.
        out.append(text.replace('%', '%%'))
    return out


def main(argv):
    if len(argv) not in (4, 5):
        sys.exit(__doc__.strip().splitlines()[2])
    news, who, fallback = argv[1:4]
    fallback = datetime.date.fromisoformat(fallback)
    with open(news, encoding='utf-8') as f:
        lines = f.read().splitlines()
    sections = list(releases(lines))
    first = True
    if len(argv) == 5 and sections and \
            argv[4] not in [v for v, _, _ in sections]:
        base = argv[4].split('-', 1)[0]
        print('* %s %s - %s' % (fallback.strftime('%a %b %d %Y'), who,
                                argv[4]))
        print('- ovs-daqring %s and the changes since (NEWS) on the Open'
              % sections[0][0])
        print('  vSwitch %s base, with DPDK linked in, for EL9.' % base)
        first = False
    for version, date, body in sections:
        if not first:
            print()
        first = False
        day = parse_date(date, fallback)
        print('* %s %s - %s' % (day.strftime('%a %b %d %Y'), who, version))
        for line in entry(body):
            print(line)
    if first:
        sys.exit('news2changelog: %s has no release section' % news)


if __name__ == '__main__':
    main(sys.argv)
