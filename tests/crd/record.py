#!/usr/bin/env python3
"""Records the expected answers of the CRD conformance suite from the reference kube-apiserver:
runs every case file of `cases/` against it and writes its normalised answers to
`expected/<file>.json` (status code, Content-Type and Warning headers, normalised body).

    record.py [--reference-bin DIR]              start a fresh reference (reference/run.sh), record
    record.py --reference-url URL --token T --ca CA.crt     use a running reference
    record.py --only SUBSTRING                   only the files whose name contains it
    record.py --runs 2                           run twice; report the cases whose answers differ
                                                 between runs (not stable enough to be data)

Exit status 1 when a wait timed out or a request failed in the harness on the reference (a case
file to fix); the answers are written all the same. Python 3.11, `requests` and `yaml`.
"""

import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite  # noqa: E402
from suite import compare, servers  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reference-bin", default=os.environ.get("REFERENCE_BIN",
                                                             os.path.join(servers.REPO, "reference", "bin")))
    p.add_argument("--reference-url")
    p.add_argument("--token")
    p.add_argument("--ca")
    p.add_argument("--only")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--jobs", type=int, default=4)
    args = p.parse_args()

    files = suite.load(args.only)
    if args.reference_url:
        ref, stop = suite.endpoint_from(args.reference_url, args.token, args.ca, "reference"), lambda: None
    else:
        ref, _ = servers.start_reference(args.reference_bin)
        stop = ref.stop
    try:
        version = reference_version(ref)
        os.makedirs(suite.EXPECTED, exist_ok=True)
        problems = []
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            runs = [list(pool.map(lambda sc: suite.run(ref, sc, problems), files)) for _ in range(args.runs)]
        unstable = 0
        for i, sc in enumerate(files):
            records = runs[0][i]
            for other in runs[1:]:
                by_case = {r["case"]: r for r in other[i]}
                for rec in records:
                    d = compare.compare_record(rec, by_case.get(rec["case"]) or {"status": None, "headers": {},
                                                                                 "body": None})
                    if d:
                        unstable += 1
                        print(f"  UNSTABLE {rec['case']}: {d[:3]}")
                        if all(c == "message" for c, *_ in d):
                            rec["message_unstable"] = True  # check.py --strict-messages skips its message
            for rec in records:  # a message joining several causes lists them in a varying order
                if len(((rec.get("body") or {}).get("details") or {}).get("causes") or []) > 1 \
                        if isinstance(rec.get("body"), dict) else False:
                    rec["message_unstable"] = True
            errors = [r for r in records if not isinstance(r["status"], int)]
            for r in errors:
                print(f"  ERROR {r['case']}: {r['status']}")
            out = {"scenario": sc["name"], "file": sc["file"], "topic": suite.topic(sc),
                   "reference": f"kube-apiserver {version}", "cases": records}
            with open(os.path.join(suite.EXPECTED, sc["file"][:-5] + ".json"), "w") as f:
                json.dump(out, f, indent=1, sort_keys=False, ensure_ascii=False)
                f.write("\n")
            print(f"recorded {sc['file']}: {len(records)} cases")
        total = sum(len(r) for r in runs[0])
        print(f"record: {total} cases in {len(files)} files" + (f"; {unstable} unstable" if args.runs > 1 else ""))
        if problems:  # a wait that timed out or a harness error on the reference: a case file to fix
            print(f"record: {len(problems)} problems (see above): the recorded answers are suspect")
            return 1
    finally:
        stop()
    return 0


def reference_version(ep):
    """The reference's gitVersion (for the expected files' header)."""
    try:
        r = suite.scenario.Runner(ep).session.get(ep.url + "/version", timeout=10)
        return r.json().get("gitVersion", "?")
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    sys.exit(main())
