#!/usr/bin/env python3
"""Writes `cases/*.yaml`, the CRD conformance suite's case files, from the tables in `casegen/`.

The case files are data (the differential harness's scenario format); this script is how they are
authored: a CRD written once per file and a case per line instead of a hundred hand-copied CRDs.
Edit the tables there and run `python3 tests/crd/make_cases.py`, then `record.py` to record the
reference's answers of the changed files. Each function there is one file (one topic, one API
group `<topic>.crd.example.com`).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from casegen import blocks  # noqa: E402
from casegen.crd_api import crd_status, crd_structural, crd_validation  # noqa: E402
from casegen.keywords import (keywords_array, keywords_format, keywords_numeric, keywords_object,  # noqa: E402
                              keywords_string)
from casegen.semantics import cel, defaulting, pruning, ratcheting  # noqa: E402
from casegen.serving import conversion, deletion, printer, selectable, subresources, versions  # noqa: E402

CASES = blocks.CASES
FILES = blocks.FILES


def main():
    os.makedirs(CASES, exist_ok=True)
    for fn in [crd_validation, crd_structural, crd_status, keywords_numeric, keywords_string, keywords_format,
               keywords_array, keywords_object, defaulting, pruning, ratcheting, cel, versions, subresources,
               selectable, printer, deletion, conversion]:
        fn()
    total = 0
    for f in FILES:
        f.write()
        n = sum(1 for s in f.steps if "case" in s)
        total += n
        print(f"{f.topic}: {n} cases")
    print(f"{len(FILES)} files, {total} cases")


if __name__ == "__main__":
    main()

