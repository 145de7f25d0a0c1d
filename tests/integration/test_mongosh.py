"""Runs tests/shell/*.js through the real mongosh against hourglassd."""

import os
import re
import subprocess

from clienttools import REPO, isolated_env, mongosh_path

SHELL_DIR = os.path.join(REPO, "tests", "shell")

# Lines mongosh may print besides the script's own output: the server's
# startup-warning banner that it shows on connect, and its one-time notice
# about usage data collection.
_USUAL = [
    re.compile(r"^-+$"),
    re.compile(r"The server generated these startup warnings when booting", re.I),
    re.compile(r"^\s*\d{4}-\d\d-\d\dT\S+: "),  # a startup warning line
    re.compile(r"anonymous usage data|disableTelemetry\(\)|mongodb\.com/legal/privacy", re.I),
    re.compile(r"^\s*$"),
]


def run_mongosh(server, tmp_path, script, *extra):
    return subprocess.run(
        [mongosh_path(), f"mongodb://127.0.0.1:{server.port}/test", "--quiet", *extra,
         "--file", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=isolated_env(tmp_path),
        cwd=REPO,
    )


def unusual_lines(text):
    return [l for l in text.splitlines() if not any(p.search(l) for p in _USUAL)]


def run_script(server, tmp_path, name, ok_line):
    p = run_mongosh(server, tmp_path, os.path.join(SHELL_DIR, name))
    detail = f"exit {p.returncode}\n--- stdout ---\n{p.stdout}\n--- stderr ---\n{p.stderr}"
    assert p.returncode == 0, detail
    out_lines = [l for l in p.stdout.splitlines() if l.strip()]
    assert out_lines and out_lines[-1] == ok_line, detail
    others = [l for l in unusual_lines(p.stdout) if l != ok_line]
    assert not others, "unexpected mongosh output:\n" + "\n".join(others)
    assert not unusual_lines(p.stderr), "unexpected mongosh stderr:\n" + p.stderr


def test_basic_script(server, tmp_path):
    run_script(server, tmp_path, "basic.js", "BASIC_JS_OK")


def test_timeseries_script(server, tmp_path):
    run_script(server, tmp_path, "timeseries.js", "TIMESERIES_JS_OK")


def test_collation_script(server, tmp_path):
    run_script(server, tmp_path, "collation.js", "COLLATION_JS_OK")


def test_geo_script(server, tmp_path):
    run_script(server, tmp_path, "geo.js", "GEO_JS_OK")


def test_views_script(server, tmp_path):
    run_script(server, tmp_path, "views.js", "VIEWS_JS_OK")


def test_clustered_and_fsync_script(fresh_server, tmp_path):
    # Its own server: the script takes the fsync lock, which would hold up other tests' writes.
    s = fresh_server.new()
    run_script(s, tmp_path, "clustered_fsync.js", "CLUSTERED_FSYNC_JS_OK")
    assert s.shutdown_command() == 0


def test_failing_check_exits_nonzero(server, tmp_path):
    script = tmp_path / "fail.js"
    script.write_text("db.runCommand({ping: 1});\nthrow new Error('deliberate');\n")
    p = run_mongosh(server, tmp_path, str(script))
    assert p.returncode != 0
    assert "deliberate" in (p.stdout + p.stderr)


def test_eval_prints_server_version(server, tmp_path):
    p = subprocess.run(
        [mongosh_path(), f"mongodb://127.0.0.1:{server.port}/test", "--quiet", "--eval",
         "print(db.version()); print(db.hello().isWritablePrimary)"],
        capture_output=True, text=True, timeout=120, env=isolated_env(tmp_path), cwd=REPO,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    assert lines[-2].startswith("7.0."), p.stdout
    assert lines[-1] == "true"
