"""Measured peaks are checked against the device's theoretical peaks and measured again when implausible."""

import json

import pytest

from kforge_worker import backends
from kforge_worker.backends import peak_bounds
from kforge_worker.checks import sol

ZEN4 = ("processor\t: 0\nmodel name\t: AMD EPYC 9R14\ncpu MHz\t\t: 3700.000\n"
        "flags\t\t: fpu sse2 avx fma avx2 avx512f avx512_bf16\n")

# The figures of the report: 13.4 GFLOP/s fp32 on two Zen 4 cores, 0.44 GB/s at 4 MB, 13.7 GB/s at 128 MB.
IMPLAUSIBLE = {"flops": {"float32": 13.4e9},
               "bandwidth": [{"working_set_bytes": 4 << 20, "bytes_per_s": 0.44e9},
                             {"working_set_bytes": 128 << 20, "bytes_per_s": 13.7e9}]}
PLAUSIBLE = {"flops": {"float32": 150e9},
             "bandwidth": [{"working_set_bytes": 4 << 20, "bytes_per_s": 60e9},
                           {"working_set_bytes": 128 << 20, "bytes_per_s": 13.7e9}]}


def test_theoretical_cpu_peak_is_threads_clock_lanes_and_fma():
    bounds = peak_bounds.cpu_bounds(2, ZEN4)
    # 2 threads x 3.7 GHz x 1.3 turbo slack x 16 fp32 lanes x 2 (FMA) x 2 pipes
    assert abs(bounds["flops"]["float32"] - 2 * 3.7e9 * 1.3 * 16 * 2 * 2) < 1e3
    assert bounds["flops"]["float64"] == bounds["flops"]["float32"] / 2
    assert bounds["flops"]["bfloat16"] == bounds["flops"]["float32"] * 2  # avx512_bf16
    assert peak_bounds.cpu_bounds(1, "model name\t: x\n") == {}  # no clock: nothing to check against


def test_the_reported_peaks_are_implausible_and_sane_ones_are_not():
    bounds = peak_bounds.cpu_bounds(2, ZEN4)
    problems = peak_bounds.implausible(IMPLAUSIBLE, bounds)
    assert any(p.startswith("float32 13.4 GFLOP/s") for p in problems), problems
    assert any("0.44 GB/s at 4096 KiB" in p for p in problems), problems
    assert not any("13.7 GB/s" in p for p in problems), problems
    assert peak_bounds.implausible(PLAUSIBLE, bounds) == []
    above = {"flops": {"float32": 10 * bounds["flops"]["float32"]}, "bandwidth": []}
    assert peak_bounds.implausible(above, bounds)


def test_gpu_bandwidth_comes_from_the_datasheet():
    assert peak_bounds.gpu_bounds("NVIDIA H100 80GB HBM3")["bandwidth"] == 3.35e12
    assert peak_bounds.gpu_bounds("NVIDIA H100 PCIe")["bandwidth"] == 2.0e12
    assert peak_bounds.gpu_bounds("Some Future GPU") == {}
    peaks = {"flops": {}, "bandwidth": [{"working_set_bytes": 2 << 30, "bytes_per_s": 4.1e12}]}
    assert peak_bounds.implausible(peaks, peak_bounds.gpu_bounds("NVIDIA H100 80GB HBM3"))


def _scripted_measurements(monkeypatch, results):
    calls = []

    def measure():
        calls.append(1)
        return json.loads(json.dumps(results[min(len(calls), len(results)) - 1]))

    monkeypatch.setattr(backends.cpu, "measure_peaks", lambda device: measure())
    monkeypatch.setattr(backends.cpu, "theoretical_bounds", lambda device: peak_bounds.cpu_bounds(2, ZEN4))
    return calls


def test_implausible_peaks_are_measured_again(monkeypatch):
    calls = _scripted_measurements(monkeypatch, [IMPLAUSIBLE, PLAUSIBLE])
    data = sol.measure_plausible("cpu")
    assert len(calls) == 2 and data["measurements"] == 2
    assert data["flops"]["float32"] == 150e9 and "implausible" not in data


def test_peaks_that_stay_implausible_are_kept_with_a_note(monkeypatch):
    calls = _scripted_measurements(monkeypatch, [IMPLAUSIBLE])
    data = sol.measure_plausible("cpu")
    assert len(calls) == sol.MAX_PEAK_MEASUREMENTS
    assert data["implausible"]


def test_an_implausible_cached_peak_is_measured_again_and_the_cache_replaced(monkeypatch, tmp_path):
    calls = _scripted_measurements(monkeypatch, [PLAUSIBLE])
    key = sol.peaks_key("cpu")
    import hashlib

    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    (tmp_path / f"{digest}.json").write_text(json.dumps({**IMPLAUSIBLE, "key": key}))
    data = sol.device_peaks("cpu", str(tmp_path))
    assert len(calls) == 1 and data["cached"] is False
    assert json.loads((tmp_path / f"{digest}.json").read_text())["flops"]["float32"] == 150e9
    again = sol.device_peaks("cpu", str(tmp_path))
    assert again["cached"] is True and len(calls) == 1  # a plausible cache is used as it is


def test_each_device_kind_has_one_back_end_with_the_same_interface():
    assert backends.for_device("cpu") is backends.cpu
    assert backends.for_device("cuda:1") is backends.cuda and backends.kind_of("cuda:1") == "cuda"
    for backend in (backends.cpu, backends.cuda):
        for name in ("model_name", "measure_peaks", "theoretical_bounds"):
            assert callable(getattr(backend, name)), (backend.__name__, name)
    with pytest.raises(ValueError, match=r"no back end for device 'xpu:0' \(known kinds: cpu, cuda\)"):
        backends.for_device("xpu:0")


def test_the_peaks_key_names_the_device_kind_and_its_model():
    key = sol.peaks_key("cpu")
    assert key["device"] == "cpu" and key["model"] == backends.cpu.model_name("cpu")
