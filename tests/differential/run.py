#!/usr/bin/env python3
"""The differential harness (issue #33): the same request sequences sent to kube-apiserver
(the reference, `reference/`) and to fieldstore, their answers compared after normalising what
legitimately differs (`normalise.py`), differences counted by category (`compare.py`) and written
to REPORT.md (`report.py`). Scenarios are data: `scenarios/*.yaml` (format in `scenario.py`).

    run.py [--fieldstore BIN] [--reference-bin DIR]       start both servers (fresh data), compare
    run.py --reference-url URL --fieldstore-url URL --token T --ca CA.crt    use running servers
    run.py --only SUBSTRING          only the scenarios whose name contains it
    run.py --scenarios DIR           the scenarios of DIR (default scenarios/; e.g. tests/crd/cases)
    run.py --report FILE             where the report goes (default REPORT.md here)
    run.py --fieldstore-only         run against fieldstore alone (prints each step's code)

Exit status 0 whatever the agreement (it is a measure, not a test); 2 on a harness error.
Python 3.11, `requests` and `yaml`.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import report  # noqa: E402
import scenario  # noqa: E402
import servers  # noqa: E402
from normalise import Normaliser  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NOTES = os.path.join(HERE, "NOTES.md")


def main():
    args = parse_args()
    scenarios = [s for s in scenario.load(args.scenarios) if not args.only or args.only in s["name"]]
    ref, fs, stops = endpoints(args)
    try:
        t0 = time.monotonic()
        if args.fieldstore_only:
            return fieldstore_only(fs, scenarios)
        results, steps, steps_agree = run_all(ref, fs, scenarios, args.jobs)
        meta = {"reference": f"kube-apiserver at {ref.url}", "fieldstore": args.fieldstore or fs.url,
                "steps": steps, "steps_agree": steps_agree, "seconds": round(time.monotonic() - t0)}
        notes = open(NOTES).read() if os.path.exists(NOTES) else ""
        with open(args.report, "w") as f:
            f.write(report.render(results, meta, notes))
        agree = sum(1 for _, d in results if not d)
        print(f"differential: {agree} of {len(results)} scenarios agree, {steps_agree} of {steps} steps; "
              f"report in {args.report}")
    finally:
        for stop in stops:
            stop()
    return 0


def parse_args():
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fieldstore", default=os.environ.get("FIELDSTORE_BIN"))
    p.add_argument("--reference-bin", default=os.environ.get("REFERENCE_BIN",
                                                             os.path.join(servers.REPO, "reference", "bin")))
    p.add_argument("--reference-url")
    p.add_argument("--fieldstore-url")
    p.add_argument("--token")
    p.add_argument("--ca")
    p.add_argument("--only")
    p.add_argument("--scenarios", default=os.path.join(HERE, "scenarios"))
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--fieldstore-only", action="store_true")
    p.add_argument("--report", default=os.path.join(HERE, "REPORT.md"))
    return p.parse_args()


def endpoints(args):
    """The two endpoints (the reference None with --fieldstore-only) and the stops to call."""
    if args.reference_url or args.fieldstore_url:
        mk = lambda name, url: servers.Endpoint(name, url, args.token, args.ca) if url else None  # noqa: E731
        return mk("reference", args.reference_url), mk("fieldstore", args.fieldstore_url), []
    binary = args.fieldstore or os.path.join(servers.REPO, "target", "release", "fieldstore")
    if args.fieldstore_only:
        run_dir = tempfile.mkdtemp(prefix="fieldstore-differential.")
        servers.certs(run_dir)
        fs = servers.start_fieldstore(binary, run_dir)
        return None, fs, [fs.stop, lambda: shutil.rmtree(run_dir, ignore_errors=True)]
    ref, run_dir = servers.start_reference(args.reference_bin)
    try:
        fs = servers.start_fieldstore(binary, run_dir)
    except BaseException:
        ref.stop()
        raise
    return ref, fs, [fs.stop, ref.stop]


def run_all(ref, fs, scenarios, jobs):
    """Runs every scenario on both servers (`jobs` scenarios at a time); returns
    ([(scenario, diffs)], steps compared, steps agreeing)."""
    def one(sc):
        recs = []
        for ep in (ref, fs):
            try:
                records = scenario.Runner(ep).run(sc)
            except Exception as e:  # a harness or connection failure is a difference, not a crash
                records = [{"label": "(scenario)", "status": f"harness error: {e!r}"[:300], "headers": {},
                            "body": None}]
            norm = Normaliser()
            normalised = [norm.record(r) for r in records]  # every record, in order: labels follow the steps
            recs.append([r for r in normalised if r.get("compare", True)])
        per_step = [compare.compare_record(a, b) for a, b in zip(*recs)]
        return sc, compare.compare(*recs), len(per_step), sum(1 for d in per_step if not d)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(one, scenarios))
    for sc, d, _, _ in done:
        print(f"  {'agree ' if not d else 'DIFFER'} {sc['name']}" + (f" ({len(d)})" if d else ""))
    return [(sc, d) for sc, d, _, _ in done], sum(n for *_, n, _ in done), sum(a for *_, a in done)


def fieldstore_only(fs, scenarios):
    """Runs the scenarios on fieldstore alone and prints each step's code (writing scenarios)."""
    for sc in scenarios:
        records = scenario.Runner(fs).run(sc)
        codes = " ".join(f"{r['status']}" + (f"/{len(r['events'])}ev" if "events" in r else "") for r in records
                         if r.get("compare", True))
        print(f"{sc['name']}: {codes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
