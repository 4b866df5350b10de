"""Race tests in a kernel team's own pytest suite.

Installing mpnpu registers a pytest plugin (:mod:`mpnpu.testing.plugin`, entry point ``pytest11``
named ``mpnpu``) that stays inert until a test asks for it. It provides:

- the ``mpnpu_device`` fixture: one emulated device per test process, reused across tests and
  closed when the session ends (``block_dim`` from ``@pytest.mark.mpnpu(block_dim=...)`` or
  ``--mpnpu-block-dim``);
- the ``mpnpu_seed`` fixture and ``@pytest.mark.mpnpu(repeat=N, seed=S)``: a test run N times with
  seeds S, S+1, ...; the failure names the seed, and ``--mpnpu-seed`` replays it;
- ``--mpnpu-racecheck``: every launch made through the fixture is traced and the test fails on any
  hazard;
- assertion helpers, importable from here::

      from mpnpu.testing import assert_no_races, assert_matches_golden

The helpers are imported on first use, so that loading the plugin costs no numpy import.
See docs/pytest-plugin.md.
"""

from __future__ import annotations

from mpnpu._lazy import lazy_attributes

__all__ = [
    "GoldenMismatch",
    "RaceNotShown",
    "RacesFound",
    "assert_matches_golden",
    "assert_no_races",
    "assert_race_is_real",
    "shared_device",
]

_LAZY = {
    "assert_no_races": "mpnpu.testing.assertions",
    "assert_matches_golden": "mpnpu.testing.assertions",
    "RacesFound": "mpnpu.testing.assertions",
    "GoldenMismatch": "mpnpu.testing.assertions",
    "assert_race_is_real": "mpnpu.testing.directed",
    "RaceNotShown": "mpnpu.testing.directed",
    "shared_device": "mpnpu.testing.devices",
}

__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
