"""A rolling restart under load (issue 19): each member of a set is stopped and started again in
turn — the secondaries first, then the primary after it steps down, as MongoDB's maintenance
procedure goes — while four writers insert with w: "majority". The set keeps taking writes, every
acknowledged one is there at the end, none ran twice, and every member holds the same data."""

import threading
import time

from pymongo.errors import DuplicateKeyError, PyMongoError
from pymongo.write_concern import WriteConcern

from test_replica_set import hello_of, start_set, wait_for
from test_replication_log import set_client, wait_same_hashes


def test_a_rolling_restart_under_load_loses_nothing(fresh_server):
    members = start_set(fresh_server)
    rs = set_client(members, retryWrites=True)
    try:
        coll = rs.get_database("roll", write_concern=WriteConcern(w="majority")).events
        acknowledged = []
        failures = []
        stop = threading.Event()

        def writer(n):
            i = 0
            while not stop.is_set():
                # Each _id is sent once by this writer: a duplicate could only come from the
                # driver's retry running an insert again.
                doc_id = f"{n}-{i}"
                i += 1
                try:
                    coll.insert_one({"_id": doc_id})
                    acknowledged.append(doc_id)
                except PyMongoError as e:  # while no primary is elected
                    failures.append(e)
                    time.sleep(0.05)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()

        def primary():
            return next((m for m in members if m.running() and
                         hello_of(m).get("isWritablePrimary")), None)

        def secondary_again(m):
            return lambda: hello_of(m).get("secondary")

        try:
            first_primary = wait_for(primary, 30, what="a primary")
            order = [m for m in members if m is not first_primary] + [first_primary]
            for m in order:
                if m is first_primary:
                    # As MongoDB's procedure: the primary hands over before it stops.
                    c = m.client(directConnection=True)
                    try:
                        c.admin.command("replSetStepDown", 30)
                    except PyMongoError:
                        pass  # the step-down closes connections
                    finally:
                        c.close()
                    wait_for(lambda: primary() not in (None, m), 30, what="a new primary")
                before = len(acknowledged)
                m.stop()
                m.start(port=m.port)
                wait_for(secondary_again(m), 60, what=f"member {m.port} to be a secondary")
                # Writes went on meanwhile.
                wait_for(lambda: len(acknowledged) > before + 20, 30, what="writes to go on")
        finally:
            stop.set()
            for t in threads:
                t.join()
        stored = {d["_id"] for d in coll.find({}, {"_id": 1})}
        missing = [i for i in acknowledged if i not in stored]
        assert not missing, missing[:10]
        # A driver's retry of an insert that had run is answered from the record of it, not run
        # again (which would fail with a duplicate key).
        assert not [e for e in failures if isinstance(e, DuplicateKeyError)], failures[:3]
        current = wait_for(primary, 30, what="a primary")
        wait_same_hashes([current] + [m for m in members if m is not current], "roll", 60)
    finally:
        rs.close()
