"""The election soak (issue 19): while writers insert — into a regular and a time-series
collection, with w: "majority" through a replica-set client that retries, and with w: 1 straight
to whichever member is primary — the primary is, at random, killed (kill -9) and restarted, cut
off from the others and healed (the test-only fail point hgPartitionMember), or stepped down,
election after election. At the end every member holds the same data (dbHash) and every write
acknowledged with w: "majority" is there; w: 1 writes may have been rolled back, but never on
one member only. HG_SOAK_ELECTIONS sets how many elections (the suite runs a few; by hand:
HG_SOAK_ELECTIONS=1000), HG_SOAK_SEED the random choices, HG_SOAK_ACTIONS which failures
(kill,partition,step down)."""

import datetime
import os
import random
import threading
import time

from pymongo.errors import DuplicateKeyError, PyMongoError
from pymongo.read_preferences import ReadPreference
from pymongo.write_concern import WriteConcern

from test_replica_set import hello_of, host_of, start_set, wait_for
from test_replication_log import set_client, wait_same_hashes

ELECTIONS = int(os.environ.get("HG_SOAK_ELECTIONS", "3"))
SEED = int(os.environ.get("HG_SOAK_SEED", "1"))
# What ends a primary's term: kill -9 and restart, a partition healed later, replSetStepDown
# with force.
ACTIONS = os.environ.get("HG_SOAK_ACTIONS", "kill,partition,step down").split(",")


def running_primary(members):
    for m in members:
        if not m.running():
            continue
        try:
            h = hello_of(m)
        except PyMongoError:
            continue
        if h.get("isWritablePrimary"):
            return m, h["electionId"]
    return None


def states(members):
    """What each member says of itself and its set (for a failure's message)."""
    out = []
    for m in members:
        if not m.running():
            out.append(f"{host_of(m)}: down")
            continue
        try:
            c = m.client(directConnection=True, serverSelectionTimeoutMS=2000)
            try:
                st = c.admin.command("replSetGetStatus")
                out.append(f"{host_of(m)}: term {st.get('term')} " + ", ".join(
                    f"{x['name']} {x['stateStr']} {x.get('optime', {}).get('ts')}"
                    for x in st["members"]))
            finally:
                c.close()
        except PyMongoError as e:
            out.append(f"{host_of(m)}: {e}")
    return "\n".join(out)


def test_elections_under_random_failures_lose_no_majority_write(fresh_server):
    rng = random.Random(SEED)
    members = start_set(fresh_server)
    rs = set_client(members, retryWrites=True)
    try:
        db = rs.get_database("soak", write_concern=WriteConcern(w="majority"))
        db.create_collection("metrics", timeseries={"timeField": "t", "metaField": "host"})
        # Created up front: a catalog change among a deposed primary's unreplicated writes is not
        # rolled back (the member turns RECOVERING: docs/replication.md), and the first failure
        # may come before the writers' first inserts.
        db.create_collection("events")
        db.create_collection("loose")
        acknowledged = {"events": [], "metrics": []}
        failures = []
        stop = threading.Event()
        t0 = datetime.datetime(2026, 12, 1)

        def majority_writer(n):
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    if i % 2:
                        db.events.insert_one({"_id": f"{n}-{i}"})
                        acknowledged["events"].append(f"{n}-{i}")
                    else:
                        db.metrics.insert_one({"t": t0 + datetime.timedelta(seconds=i),
                                               "host": f"h{n}", "seq": f"{n}-{i}"})
                        acknowledged["metrics"].append(f"{n}-{i}")
                except PyMongoError as e:  # while no primary is elected
                    failures.append(e)
                    time.sleep(0.05)

        def w1_writer():
            # Straight to the current primary, w: 1: these may be rolled back.
            i = 0
            while not stop.is_set():
                found = running_primary(members)
                if found is None:
                    time.sleep(0.05)
                    continue
                c = found[0].client(directConnection=True, serverSelectionTimeoutMS=2000)
                try:
                    w1 = c.get_database("soak", write_concern=WriteConcern(w=1))
                    for _ in range(50):
                        i += 1
                        w1.loose.insert_one({"_id": i})
                        w1.metrics.insert_one({"t": t0 + datetime.timedelta(seconds=i),
                                               "host": "loose", "seq": f"w1-{i}"})
                except PyMongoError:
                    time.sleep(0.05)
                finally:
                    c.close()

        threads = [threading.Thread(target=majority_writer, args=(n,)) for n in range(3)]
        threads.append(threading.Thread(target=w1_writer))
        for t in threads:
            t.start()
        try:
            primary, election = wait_for(lambda: running_primary(members), 30, what="a primary")
            for n in range(ELECTIONS):
                before = sum(len(v) for v in acknowledged.values())
                action = rng.choice(ACTIONS)
                if action == "kill":
                    primary.kill()
                elif action == "partition":
                    c = primary.client(directConnection=True)
                    c.admin.command("configureFailPoint", "hgPartitionMember", mode="alwaysOn")
                else:
                    c = primary.client(directConnection=True)
                    try:
                        c.admin.command("replSetStepDown", 10, force=True)
                    except PyMongoError:
                        pass
                    finally:
                        c.close()
                others = [m for m in members if m is not primary]
                try:
                    new, new_election = wait_for(lambda: running_primary(others), 60,
                                                 what=f"election {n + 1} ({action})")
                except AssertionError as e:
                    raise AssertionError(f"{e}\n{states(members)}") from None
                assert new_election != election
                if action == "kill":
                    primary.start(port=primary.port)
                elif action == "partition":
                    c.admin.command("configureFailPoint", "hgPartitionMember", mode="off")
                    c.close()
                if action != "step down":
                    old = primary
                    wait_for(lambda: hello_of(old).get("primary") == host_of(new), 60,
                             what=f"the old primary to follow after election {n + 1}")
                primary, election = new, new_election
                wait_for(lambda: sum(len(v) for v in acknowledged.values()) > before + 10, 60,
                         what="writes to go on")
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert not [e for e in failures if isinstance(e, DuplicateKeyError)], failures[:3]
        current = wait_for(lambda: running_primary(members), 60, what="a primary")[0]
        wait_for(lambda: all(hello_of(m).get("secondary") for m in members if m is not current),
                 60, what="every other member to be a secondary")
        try:
            wait_same_hashes([current] + [m for m in members if m is not current], "soak", 120)
        except AssertionError as e:
            detail = []
            for m in members:
                c = m.client(directConnection=True)
                try:
                    h = c.soak.command("dbHash", read_preference=ReadPreference.SECONDARY_PREFERRED)
                    counts = {n: c.soak[n].count_documents({}) for n in ("events", "loose")}
                    buckets = c.soak["system.buckets.metrics"].count_documents({})
                finally:
                    c.close()
                detail.append(f"{host_of(m)}: {h['collections']} {counts} buckets {buckets}")
            raise AssertionError(f"{e}\n" + "\n".join(detail)) from None
        for m in members:
            c = m.client(directConnection=True)
            try:
                events = {d["_id"] for d in c.soak.events.find({}, {"_id": 1})}
                seqs = [d["seq"] for d in c.soak.metrics.find({"host": {"$ne": "loose"}},
                                                               {"seq": 1})]
            finally:
                c.close()
            missing = [i for i in acknowledged["events"] if i not in events]
            assert not missing, (host_of(m), missing[:10])
            missing = set(acknowledged["metrics"]) - set(seqs)
            assert not missing, (host_of(m), sorted(missing)[:10])
            # A measurement is stored once, whatever the retries.
            assert len(seqs) == len(set(seqs)), host_of(m)
    finally:
        rs.close()
