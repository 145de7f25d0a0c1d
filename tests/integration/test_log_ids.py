"""Hourglass's own log ids (88xxxxx, the messages mongod has no id for) name one message each, as
mongod's ids do: a user who filters the log by id, or an alert on one, must not get another
message. Read from the sources, so no server is started."""

import collections
import pathlib
import re

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"
# LOGI/LOGW/LOGE("COMPONENT", id, "message", ...): the id and the message's first line.
LOG_CALL = re.compile(r'LOG[IWE]\(\s*"[A-Z_]+",\s*(88\d{5}),\s*"([^"]*)"')


def test_every_hourglass_log_id_names_one_message():
    places = collections.defaultdict(list)
    for path in sorted(SRC.rglob("*.cc")) + sorted(SRC.rglob("*.h")):
        text = path.read_text()
        for m in LOG_CALL.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            places[m.group(1)].append(f"{path.relative_to(SRC)}:{line} {m.group(2)!r}")
    assert len(places) >= 20, "the pattern no longer finds the log calls"
    reused = {log_id: where for log_id, where in places.items() if len(where) > 1}
    assert reused == {}
