"""The layer compression section's arithmetic and its measurement on a tiny venv."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks.compression import CODECS, break_even_mb_s, measure


def test_break_even_is_the_bandwidth_where_bytes_saved_twice_pay_for_the_seconds_added():
    plain = {"bytes": 2000e6, "client_s": 10.0, "node_s": 6.0}
    codec = {"bytes": 500e6, "client_s": 14.0, "node_s": 8.0}
    # 2 x 1500 MB saved against 6 s added: faster below 500 MB/s
    assert break_even_mb_s(plain, codec) == pytest.approx(500.0)
    assert break_even_mb_s(plain, {**codec, "client_s": 8.0, "node_s": 5.0}) == float("inf")


def test_every_codec_ships_fewer_bytes_of_a_venvs_layers_and_the_scratch_goes(tmp_path):
    prefix = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    got = measure(prefix, tmp_path / "work")
    assert set(got) == {"tar", *(c[0] for c in CODECS)}
    assert got["tar"]["bytes"] > 0
    for name, _c, _d in CODECS:
        assert 0 < got[name]["bytes"] < got["tar"]["bytes"], name
        assert got[name]["client_s"] >= got["tar"]["client_s"], name  # tar, then the codec
    assert not (tmp_path / "work").exists()
