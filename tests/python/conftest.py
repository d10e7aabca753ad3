"""Shared pytest fixtures.

`hub`: a fresh local Hub (tests/hub) per test, stopped and removed afterwards.
It is a hubclient.Hub: hub.endpoint, hub.cdn, hub.root, hub.publish(...),
hub.publish_cli(...), hub.fault(...), hub.faults_clear(), hub.log(),
hub.log_clear(), hub.requests(...), hub.count(...), hub.config(...),
hub.hf_env(cache_dir).  See tests/hub/README.md.

Helpers that are not fixtures (stopping a process, free ports, a
virtualenv made once, built variants, a Python client run against the
hub) are in testsupport.py.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hubclient import Hub  # noqa: E402


@pytest.fixture
def hub():
    h = Hub.start()
    try:
        yield h
    finally:
        h.stop()
