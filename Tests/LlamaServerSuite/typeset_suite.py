"""A pytest plugin for llama.cpp's server test suite run against a stand-in server
(Tests/LlamaServerSuite/run.sh):

* the suite's session start, which launches every preset server once to download its model
  from Hugging Face, is skipped (the models are local: the wrapper names $SUITE_MODEL);
* with --expected-failures FILE, each test listed there (`node id | reason`, split at the last
  " | ": node ids may hold "|") is marked as an
  expected failure with its reason, strictly: a listed test that passes fails the run, so the
  list holds only tests that still fail, and a listed test the suite no longer has is an error."""
from pathlib import Path

import pytest


def pytest_addoption(parser):
    parser.addoption("--expected-failures", default=None, help="a file of `node id | reason` lines")


def pytest_configure(config):
    import utils   # the suite's own module, on the path from its rootdir
    utils.ServerPreset.load_all = staticmethod(lambda: None)


def read_list(path):
    listed = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        node, separator, reason = line.rpartition(" | ")
        if not separator or not reason.strip():
            raise pytest.UsageError(f"{path}:{number}: expected `node id | reason`")
        listed[node.strip()] = reason.strip()
    return listed


def pytest_collection_modifyitems(config, items):
    path = config.getoption("--expected-failures")
    if not path:
        return
    listed = read_list(path)
    collected = {item.nodeid for item in items}
    missing = sorted(set(listed) - collected)
    if missing:
        raise pytest.UsageError("listed but not in the suite: " + ", ".join(missing))
    for item in items:
        if item.nodeid in listed:
            item.add_marker(pytest.mark.xfail(reason=listed[item.nodeid], strict=True))
