"""Time-series ingest into a three-member replica set on this machine (issue 19's benchmark),
beside a single server's: the same `ts_bench ingest` (TSBS cpu-only shape, insertMany of 1,000)
against a standalone hourglassd, then against the primary of a fresh three-member set with
w: 1 and with w: "majority".

  replset_ingest.py [--runs 3] [--hosts 100] [--hours 2] [--conns 4] [--bin build/release]

Every run starts fresh members in a temporary directory (the set with the test-only switch
that lets it have several members, docs/replication.md). All members share this machine's
cores with the client. Prints a line per run and one RESULT line of medians in
measurements/s, and the ratios to the standalone's.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from failover_run import Member, start_set


def ingest(binary_dir, port, write_concern, a):
    uri = f"mongodb://127.0.0.1:{port}/?directConnection=true&w={write_concern}"
    out = subprocess.run(
        [os.path.join(binary_dir, "bench", "ts_bench"), "ingest", "--uri", uri, "--hosts",
         str(a.hosts), "--hours", str(a.hours), "--conns", str(a.conns)],
        capture_output=True, text=True, check=False).stdout
    for line in out.splitlines():
        if line.startswith("RESULT ingest") and "measurements_per_s=" in line:
            return float(line.split("measurements_per_s=")[1].split()[0])
    sys.exit(f"ts_bench ingest failed: {out}")


def run_once(a, mode):
    root = tempfile.mkdtemp(prefix="replset_ingest.")
    binary = os.path.join(a.bin, "hourglassd")
    try:
        if mode == "standalone":
            m = Member(binary, root, 0, args=["--quiet"])
            members = [m]
            m.start()
            return ingest(a.bin, m.port, 1, a)
        members = [Member(binary, root, i) for i in range(3)]
        start_set(members)
        return ingest(a.bin, members[0].port, "majority" if mode == "majority" else 1, a)
    finally:
        for m in members:
            if m.proc and m.proc.poll() is None:
                m.kill()
        shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--hours", type=int, default=2)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--bin", default="build/release")
    a = ap.parse_args()
    medians = {}
    for mode in ("standalone", "w1", "majority"):
        rates = []
        for run in range(a.runs):
            rates.append(run_once(a, mode))
            print(f"{mode} run {run}: {rates[-1]:.0f} measurements/s", flush=True)
        medians[mode] = statistics.median(rates)
    print(f"RESULT standalone={medians['standalone']:.0f} w1={medians['w1']:.0f} "
          f"majority={medians['majority']:.0f} "
          f"w1_ratio={medians['w1'] / medians['standalone']:.2f} "
          f"majority_ratio={medians['majority'] / medians['standalone']:.2f}")


if __name__ == "__main__":
    main()
