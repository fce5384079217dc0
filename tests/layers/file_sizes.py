#!/usr/bin/env python3
"""No Rust file over 800 lines (`make lint` runs this).

Every git-tracked `*.rs` file of the repository counts: the crates' sources (`codec/src`,
`engine/src`, `server/src`, `src`), their tests (`codec/tests`, `engine/tests`, `server/tests`,
`tests`), `benches`, `examples`, `fuzz` and the build scripts. A longer file holds more than one
concept: split it into modules named after what each holds. The offenders are listed, longest
first, and the script exits 1.

Usage: file_sizes.py [PATH ...]   (default: every tracked *.rs file; a PATH limits the check to
the tracked files under it)
"""

import os
import subprocess
import sys

MAX_LINES = 800


def tracked_rust_files(root, paths):
    """The git-tracked `*.rs` files under `paths` (all of them without), relative to `root`."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", *(paths or ["."])],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return sorted(f for f in out.split("\0") if f.endswith(".rs"))


def line_count(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    paths = [os.path.relpath(os.path.abspath(p), root) for p in sys.argv[1:]]
    files = tracked_rust_files(root, paths)
    # A tracked file deleted in the work tree is not checked.
    sizes = [(line_count(os.path.join(root, f)), f) for f in files if os.path.exists(os.path.join(root, f))]
    over = sorted((s for s in sizes if s[0] > MAX_LINES), reverse=True)
    for lines, f in over:
        print(f"{f}: {lines} lines (at most {MAX_LINES}): split it into modules by concept")
    if over:
        sys.exit(1)
    longest = max(sizes, default=(0, "none"))
    print(f"file_sizes: {len(sizes)} Rust files, none over {MAX_LINES} lines (longest: {longest[1]}, {longest[0]})")


if __name__ == "__main__":
    main()
