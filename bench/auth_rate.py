#!/usr/bin/python3
"""Server-side SCRAM-SHA-256 logins per second: saslStart and saslContinue on one connection to a
fresh `hourglassd --auth` (the localhost exception creates the user), the client deriving the
salted password once, as drivers cache it, so the figure is the server's work per login. Prints
the median of 5 runs of N logins (pymongo).

    bench/auth_rate.py PORT [N]

e.g. after `build/release/hourglassd --auth --port 29555 --dbpath $(mktemp -d) --quiet &`."""
import base64
import hashlib
import hmac
import os
import statistics
import sys
import time

import pymongo
from bson.binary import Binary

port = int(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
client = pymongo.MongoClient("127.0.0.1", port, maxPoolSize=1, directConnection=True)
client.admin.command("createUser", "bench", pwd="bench-pw", roles=["root"])
salted = {}


def login():
    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n=bench,r={nonce}"
    r1 = client.admin.command({"saslStart": 1, "mechanism": "SCRAM-SHA-256",
                               "payload": Binary(("n,," + first_bare).encode()),
                               "options": {"skipEmptyExchange": True}})
    server_first = bytes(r1["payload"]).decode()
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    key = (attrs["s"], attrs["i"])
    if key not in salted:
        salted[key] = hashlib.pbkdf2_hmac("sha256", b"bench-pw", base64.b64decode(attrs["s"]),
                                          int(attrs["i"]))
    client_key = hmac.new(salted[key], b"Client Key", "sha256").digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message, "sha256").digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    r2 = client.admin.command({"saslContinue": 1, "conversationId": 1,
                               "payload": Binary(f"{without_proof},p={proof}".encode())})
    assert r2["done"], r2


login()
rates = []
for _ in range(5):
    start = time.perf_counter()
    for _ in range(n):
        login()
    rates.append(n / (time.perf_counter() - start))
print(f"logins/s median {statistics.median(rates):.0f} runs {[round(r) for r in rates]}")
