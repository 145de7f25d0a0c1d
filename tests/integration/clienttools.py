"""Locating the repo's npm-installed client tools (mongosh, node_modules)."""

import os
import shutil

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NODE_MODULES = os.path.join(REPO, "node_modules")


def require_node():
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed (needed for the client tests)", pytrace=False)
    return node


def require_node_modules():
    if not os.path.isdir(os.path.join(NODE_MODULES, "mongodb")):
        pytest.fail(
            f"{NODE_MODULES}/mongodb is missing: run `npm ci` at the repo root "
            "(tests/run_client_tests.sh does it)",
            pytrace=False,
        )


def mongosh_path():
    require_node_modules()
    path = os.path.join(NODE_MODULES, ".bin", "mongosh")
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: run `npm ci` at the repo root", pytrace=False)
    return path


def isolated_env(tmp_path):
    """An environment whose HOME is a scratch dir, so mongosh's config, history
    and logs neither read nor pollute the user's."""
    env = dict(os.environ)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env["HOME"] = str(home)
    env["MONGOSH_NO_UPDATE_CHECK"] = "1"
    env["DO_NOT_TRACK"] = "1"
    env.pop("NODE_OPTIONS", None)
    return env
