"""Runs the Node.js driver tests (tests/node, node's built-in test runner)."""

import os
import subprocess

from clienttools import REPO, isolated_env, require_node, require_node_modules

NODE_DIR = os.path.join(REPO, "tests", "node")


def test_node_driver_suite(server, tmp_path):
    node = require_node()
    require_node_modules()
    files = sorted(
        os.path.join(NODE_DIR, f) for f in os.listdir(NODE_DIR) if f.endswith(".test.mjs")
    )
    assert files, "no tests/node/*.test.mjs files"
    env = isolated_env(tmp_path)
    env["HOURGLASS_URI"] = f"mongodb://127.0.0.1:{server.port}/?directConnection=true"
    p = subprocess.run(
        [node, "--test", "--test-reporter=spec", *files],
        capture_output=True, text=True, timeout=600, env=env, cwd=REPO,
    )
    assert p.returncode == 0, f"node --test exited {p.returncode}\n{p.stdout}\n{p.stderr}"
