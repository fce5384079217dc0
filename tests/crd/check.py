#!/usr/bin/env python3
"""The CRD conformance check: fieldstore's answers to the cases of `cases/` against the answers
kube-apiserver gave (`expected/`, written by record.py), or against a live reference.

    check.py --fieldstore BIN                    start fieldstore (fresh data), compare with expected/
    check.py --fieldstore-url URL --token T --ca CA.crt      use a running fieldstore
    check.py --reference-bin DIR --fieldstore BIN            cross-check: start both, compare live
    check.py --reference-url URL ... --fieldstore-url URL    cross-check on running servers
    check.py --only SUBSTRING                    only the files whose name contains it
    check.py --write-known                       rewrite known_differences.txt with today's differences

Each case is classed `agree`, `message` (only error message texts differ: kube-apiserver's
wording is not an API contract) or `differ`. Writes REPORT.md (per topic, every difference).
Exit status 1 when a case differs (class `differ`, or `message` with --strict-messages) and is not
listed in known_differences.txt (`<case id>  <reason>`, one a line, `#` comments); else 0.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite  # noqa: E402
from suite import servers  # noqa: E402

KNOWN = os.path.join(suite.HERE, "known_differences.txt")
REPORT = os.path.join(suite.HERE, "REPORT.md")
VALUE_CHARS = 160


def main():
    args = parse_args()
    files = suite.load(args.only)
    fs, ref, stops, live = endpoints(args)
    try:
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            fs_runs = list(pool.map(lambda sc: suite.run(fs, sc), files))
            if live:
                ref_runs = list(pool.map(lambda sc: suite.run(ref, sc), files))
            else:
                ref_runs = [expected(sc) for sc in files]
        seconds = round(time.monotonic() - t0)
    finally:
        for stop in stops:
            stop()

    results = []  # (scenario, case id, class, diffs)
    for sc, want, got in zip(files, ref_runs, fs_runs):
        by_case = {r["case"]: r for r in got}
        for rec in want:
            cls, diffs = suite.classify(rec, by_case.get(rec["case"]))
            results.append((sc, rec["case"], cls, diffs))

    known = read_known()
    unstable = {r["case"] for run in ref_runs for r in run if r.get("message_unstable")}
    failing = [(sc, c, cls, d) for sc, c, cls, d in results
               if (cls == "differ" or (cls == "message" and args.strict_messages and c not in unstable))
               and c not in known]
    source = "live reference" if live else "expected/ (recorded from the reference)"
    print_summary(files, results, failing, known)
    with open(args.report, "w") as f:
        f.write(render(files, results, known, {"fieldstore": args.fieldstore or args.fieldstore_url,
                                               "against": source, "seconds": seconds}))
    if args.write_known:
        write_known(results, args.strict_messages)
        print(f"check: wrote {KNOWN}")
        return 0
    print(f"check: report in {args.report}")
    fixed = [c for _, c, cls, _ in results if c in known and (cls == "agree" or (cls == "message"
                                                                              and not args.strict_messages))]
    if fixed:
        print(f"check: {len(fixed)} cases in known_differences.txt agree now; remove their lines "
              f"(or --write-known): {' '.join(fixed[:20])}{' …' if len(fixed) > 20 else ''}")
    if failing:
        print(f"check: FAIL: {len(failing)} differing cases not in known_differences.txt:")
        for _, c, cls, d in failing[:50]:
            print(f"  {c} ({cls}): {describe(d[0]) if d else ''}")
        return 1
    return 0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fieldstore", default=os.environ.get("FIELDSTORE_BIN"))
    p.add_argument("--fieldstore-url")
    p.add_argument("--reference-bin")
    p.add_argument("--reference-url")
    p.add_argument("--token")
    p.add_argument("--ca")
    p.add_argument("--only")
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--strict-messages", action="store_true")
    p.add_argument("--write-known", action="store_true")
    p.add_argument("--report", default=REPORT)
    return p.parse_args()


def endpoints(args):
    """(fieldstore, reference or None, stops, live?)."""
    stops = []
    live = bool(args.reference_bin or args.reference_url)
    ref = None
    if args.reference_url:
        ref = suite.endpoint_from(args.reference_url, args.token, args.ca, "reference")
    if args.fieldstore_url:
        return suite.endpoint_from(args.fieldstore_url, args.token, args.ca, "fieldstore"), ref, stops, live
    binary = args.fieldstore or os.path.join(servers.REPO, "target", "release", "fieldstore")
    if args.reference_bin and not ref:
        ref, run_dir = servers.start_reference(args.reference_bin)
        stops.append(ref.stop)
    else:
        run_dir = tempfile.mkdtemp(prefix="fieldstore-crdsuite.")
        servers.certs(run_dir)
        stops.append(lambda: shutil.rmtree(run_dir, ignore_errors=True))
    fs = servers.start_fieldstore(binary, run_dir)
    stops.insert(0, fs.stop)
    return fs, ref, stops, live


def expected(sc):
    """The recorded answers of one case file (none when it was never recorded)."""
    path = os.path.join(suite.EXPECTED, sc["file"][:-5] + ".json")
    if not os.path.exists(path):
        print(f"check: no expected answers for {sc['file']} (run record.py)")
        return []
    with open(path) as f:
        return json.load(f)["cases"]


def read_known():
    """{case id: reason} from known_differences.txt."""
    known = {}
    if os.path.exists(KNOWN):
        for line in open(KNOWN):
            line = line.strip()
            if line and not line.startswith("#"):
                case, _, reason = line.partition(" ")
                known[case] = reason.strip()
    return known


def write_known(results, strict):
    """known_differences.txt listing every case that differs today, with its first difference."""
    lines = ["# CRD conformance cases where fieldstore differs from kube-apiserver today (check.py).",
             "# One case id a line, then the reason (here: its first difference). Remove a line once",
             "# the case agrees; check.py fails on a differing case not listed here.", ""]
    for _, case, cls, d in results:
        if cls == "differ" or (cls == "message" and strict):
            lines.append(f"{case}  {describe(d[0])[:200]}")
    with open(KNOWN, "w") as f:
        f.write("\n".join(lines) + "\n")


def per_topic(files, results):
    """{topic: [cases, agree, message, differ]} in file order."""
    table = {}
    for sc in files:
        table.setdefault(suite.topic(sc), [0, 0, 0, 0])
    for sc, _, cls, _ in results:
        row = table[suite.topic(sc)]
        row[0] += 1
        row[{"agree": 1, "message": 2, "differ": 3}[cls]] += 1
    return table


def print_summary(files, results, failing, known):
    table = per_topic(files, results)
    total = len(results)
    agree = sum(r[1] for r in table.values())
    msg = sum(r[2] for r in table.values())
    print(f"{'topic':28} {'cases':>5} {'agree':>5} {'msg':>4} {'differ':>6}")
    for t, (n, a, m, d) in table.items():
        print(f"{t:28} {n:5} {a:5} {m:4} {d:6}")
    print(f"check: {agree} of {total} cases agree ({pct(agree, total)}); {agree + msg} agree but for message text "
          f"({pct(agree + msg, total)}); {len(known)} known differences listed, {len(failing)} unlisted")


def render(files, results, known, meta):
    """REPORT.md."""
    table = per_topic(files, results)
    total = len(results)
    agree = sum(r[1] for r in table.values())
    msg = sum(r[2] for r in table.values())
    lines = ["# CRD conformance: fieldstore against kube-apiserver", "",
             "Generated by `tests/crd/check.py`; do not edit by hand.", "",
             f"- fieldstore: {meta['fieldstore']}", f"- expected answers: {meta['against']}",
             f"- case files: {len(files)}; cases: {total}; run time {meta['seconds']} s", "",
             f"- **agree**: {agree} of {total} ({pct(agree, total)})",
             f"- agree but for error message text: {agree + msg} of {total} ({pct(agree + msg, total)})",
             f"- listed in known_differences.txt: {len(known)}", "",
             "| topic | cases | agree | message only | differ |", "|---|---|---|---|---|"]
    for t, (n, a, m, d) in table.items():
        lines.append(f"| {t} | {n} | {a} ({pct(a, n)}) | {m} | {d} |")
    cats = {c: sum(1 for _, _, cls, d in results if cls != "agree" and any(x[0] == c for x in d))
            for c in suite.compare.CATEGORIES}
    lines += ["", "Cases with a difference of each category (a case may have several; see "
              "`tests/differential/compare.py`):", "", "| category | cases |", "|---|---|"]
    lines += [f"| {c} | {n} |" for c, n in cats.items()]
    lines += ["", "## Differences", ""]
    by_topic = defaultdict(list)
    for sc, case, cls, d in results:
        if cls != "agree":
            by_topic[suite.topic(sc)].append((case, cls, d))
    for t in table:
        if not by_topic.get(t):
            continue
        lines += [f"### {t}", ""]
        for case, cls, d in by_topic[t]:
            mark = " (known)" if case in known else ""
            lines.append(f"- `{case}` **{cls}**{mark}")
            for diff in d[:6]:
                lines.append(f"  - {describe(diff)}")
            if len(d) > 6:
                lines.append(f"  - … {len(d) - 6} more")
        lines.append("")
    return "\n".join(lines) + "\n"


def describe(diff):
    """One difference as `category label path: ref … vs fs …`."""
    cat, label, path, ref, fs = diff
    return f"{cat} `{label}` `{path}`: ref {short(ref)} vs fs {short(fs)}"


def short(value):
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True)
    if len(text) > VALUE_CHARS:
        text = text[:VALUE_CHARS] + "…"
    return "`" + text.replace("`", "'").replace("\n", " ") + "`"


def pct(n, total):
    return f"{100.0 * n / total:.1f}%" if total else "-"


if __name__ == "__main__":
    sys.exit(main())
