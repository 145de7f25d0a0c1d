"""Failover of a three-member replica set on this machine (issue 19's benchmark): kill -9 the
primary, then time until a driver connected with replicaSet= writes again.

  failover_run.py [--runs 20] [--bin build/release]

Starts three release hourglassd members on free ports in a temporary directory, with the
test-only switch that lets a set have several members (docs/replication.md), initiates the set
and waits for its primary. Each run kills the primary
with SIGKILL, then a pymongo client (seeded with the three members, serverSelectionTimeoutMS
250) retries insert_one until one succeeds: the time from the kill to that write is the
failover. The killed member is restarted and waited for as a secondary before the next run.
Prints one RESULT line: the median and the slowest failover in seconds.
"""

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import pymongo
from pymongo.errors import PyMongoError

ARGS = ["--replSet", "rs0", "--setParameter", "enableTestCommands=1",
        "--quiet"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Member:
    def __init__(self, binary, root, i, args=ARGS):
        self.binary = binary
        self.args = args
        self.dbpath = os.path.join(root, f"m{i}")
        os.makedirs(self.dbpath)
        self.port = free_port()
        self.log = open(os.path.join(root, f"m{i}.log"), "ab")
        self.proc = None

    @property
    def host(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind_ip", "127.0.0.1", "--dbpath",
             self.dbpath, *self.args], stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        sys.exit(f"member on port {self.port} did not start")

    def hello(self):
        c = pymongo.MongoClient("127.0.0.1", self.port, directConnection=True,
                                serverSelectionTimeoutMS=1000)
        try:
            return c.admin.command("hello")
        finally:
            c.close()

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def wait(predicate, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except PyMongoError:
            pass
        time.sleep(0.05)
    sys.exit("timed out")


def start_set(members):
    """Starts `members`, initiates them as set rs0 and waits for the first to be primary."""
    for m in members:
        m.start()
    first = pymongo.MongoClient("127.0.0.1", members[0].port, directConnection=True)
    first.admin.command("replSetInitiate", {
        "_id": "rs0", "members": [{"_id": i, "host": m.host} for i, m in enumerate(members)]})
    first.close()
    wait(lambda: members[0].hello().get("isWritablePrimary"))
    for m in members[1:]:
        wait(lambda m=m: m.hello().get("secondary"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--bin", default="build/release")
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="failover.")
    members = [Member(os.path.join(a.bin, "hourglassd"), root, i) for i in range(3)]
    try:
        start_set(members)
        seeds = ",".join(m.host for m in members)
        client = pymongo.MongoClient(f"mongodb://{seeds}/?replicaSet=rs0",
                                     serverSelectionTimeoutMS=250, retryWrites=False)
        coll = client.bench.failover
        coll.insert_one({"run": -1})
        times = []
        for run in range(a.runs):
            primary = next(m for m in members if m.hello().get("isWritablePrimary"))
            primary.kill()
            start = time.monotonic()
            while True:
                try:
                    coll.insert_one({"run": run})
                    break
                except PyMongoError:
                    time.sleep(0.01)
            times.append(time.monotonic() - start)
            print(f"run {run}: {times[-1]:.2f} s", flush=True)
            primary.start()
            wait(lambda: primary.hello().get("secondary"))
        client.close()
        print(f"RESULT failover_median_s={statistics.median(times):.2f} "
              f"failover_max_s={max(times):.2f} runs={len(times)}")
    finally:
        for m in members:
            if m.proc and m.proc.poll() is None:
                m.kill()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
