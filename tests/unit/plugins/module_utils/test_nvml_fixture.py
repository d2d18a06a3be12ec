"""Record and replay at pynvml's C-library layer: the unmodified pynvml runs against the fixture."""

import copy
import ctypes
import json
import re
from importlib import metadata

import pynvml
import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.nvml_fixture import (
    FixtureMiss, RecordingLibrary, ReplayLibrary, fixture_document, use_library)
from simulator.nvml_sim import SimulatedNvmlLibrary, collect_through, scenario_h100_node
from tests.support.schema_check import assert_valid_facts

FAKE_UUID = re.compile(r"^GPU-00000000-0000-4000-8000-[0-9a-f]{12}$")


def busy_node():
    """8x H100 with a process on GPU 0 and a MIG layout on GPU 5: every kind of call gets recorded."""
    scenario = scenario_h100_node(8)
    scenario["gpus"][0]["processes"] = [
        {"pid": 4242, "name": "python3", "used_mib": 70312, "gpu_instance_id": None, "compute_instance_id": None}]
    scenario["gpus"][5]["mig"].update(current=1, pending=1, gpu_instances=[
        {"id": 1, "profile_id": 9, "placement": {"start": 0, "size": 4},
         "compute_instances": [{"id": 0, "profile_id": 2, "placement": {"start": 0, "size": 3}}]},
        {"id": 7, "profile_id": 20, "placement": {"start": 4, "size": 1},
         "compute_instances": [{"id": 0, "profile_id": 0, "placement": {"start": 0, "size": 1}}]},
    ])
    return scenario


def record(scenario, scrub=False, runs=1):
    recorder = RecordingLibrary(SimulatedNvmlLibrary(scenario), scrub=scrub)
    results = [collect_through(recorder) for _run in range(runs)]
    return recorder, results[-1][1]


def replay(document):
    return collect_through(ReplayLibrary(document["calls"]))


def calls_of(document, name):
    return [call for call in document["calls"] if call["fn"] == name]


def test_replay_of_a_recording_gives_identical_facts():
    recorder, live = record(busy_node())
    answered, replayed = replay(fixture_document(recorder))
    assert answered is True
    assert replayed == live
    assert replayed["gpus"][5]["mig"]["gpu_instances"][1]["profile_name"] == "1g.10gb+me"
    assert replayed["gpus"][0]["processes"][0]["used_memory_mib"] == 70312
    assert_valid_facts(replayed)


def test_fixture_survives_a_json_round_trip():
    recorder, live = record(busy_node())
    document = fixture_document(recorder)
    text = json.dumps(document)
    assert json.loads(text) == document
    assert replay(json.loads(text))[1] == live


def test_fixture_document_names_the_pynvml_version():
    recorder, _facts = record(scenario_h100_node(1))
    assert fixture_document(recorder)["pynvml_version"] == metadata.version("nvidia-ml-py")


def test_handles_are_stable_tokens_never_addresses():
    recorder, _facts = record(scenario_h100_node(3))
    document = fixture_document(recorder)
    handles = [call["out"]["1"] for call in calls_of(document, "nvmlDeviceGetHandleByIndex_v2")]
    assert handles == ["handle:1", "handle:2", "handle:3"]
    assert calls_of(document, "nvmlDeviceGetName")[2]["args"][0] == "handle:3"
    assert "0x1000" not in json.dumps(document) and str(0x10001000) not in json.dumps(document)


def test_errors_are_kept_as_integer_codes():
    recorder, _facts = record(scenario_h100_node(1))
    fan = calls_of(fixture_document(recorder), "nvmlDeviceGetFanSpeed")
    assert fan == [{"fn": "nvmlDeviceGetFanSpeed", "args": ["handle:1", 0], "ret": pynvml.NVML_ERROR_NOT_SUPPORTED,
                    "out": {"1": 0}}]


def test_scrub_replaces_serials_and_uuids_with_consistent_fakes():
    scenario = scenario_h100_node(4)
    real_uuids = [gpu["uuid"] for gpu in scenario["gpus"]]
    real_serials = [gpu["serial"] for gpu in scenario["gpus"]]
    recorder, live = record(scenario, scrub=True, runs=2)
    document = fixture_document(recorder)
    text = json.dumps(document)
    assert not any(value in text for value in real_uuids + real_serials)

    uuids = [call["out"]["1"] for call in calls_of(document, "nvmlDeviceGetUUID")]
    assert len(uuids) == 8 and all(FAKE_UUID.match(value) for value in uuids)
    assert uuids[:4] == uuids[4:] and len(set(uuids)) == 4
    serials = [call["out"]["1"] for call in calls_of(document, "nvmlDeviceGetSerial")]
    assert serials[:4] == serials[4:] and len(set(serials)) == 4

    _answered, replayed = replay(document)
    assert [gpu["uuid"] for gpu in replayed["gpus"]] == uuids[:4]
    assert [gpu["serial"] for gpu in replayed["gpus"]] == serials[:4]
    for gpu in live["gpus"] + replayed["gpus"]:
        gpu["uuid"] = gpu["serial"] = None
    assert replayed == live


def test_scrub_false_keeps_real_values():
    scenario = scenario_h100_node(2)
    recorder, _facts = record(scenario, scrub=False)
    uuids = [call["out"]["1"] for call in calls_of(fixture_document(recorder), "nvmlDeviceGetUUID")]
    assert uuids == [gpu["uuid"] for gpu in scenario["gpus"]]


class _TextLibrary:
    """A tiny C library answering nvmlDeviceGetUUID with the next of some texts."""

    def __init__(self, texts):
        self._texts = list(texts)

    def nvmlDeviceGetUUID(self, _handle, buffer, _length):
        raw = self._texts.pop(0).encode()
        ctypes.memmove(buffer, raw + b"\0", len(raw) + 1)
        return 0


def test_scrub_maps_a_mig_uuid_naming_its_gpu_to_the_same_fake():
    gpu_uuid = "GPU-1e44b340-5807-0dbe-62e6-343a6b8b8bcd"
    texts = [gpu_uuid, "MIG-%s/3/0" % gpu_uuid, "MIG-41b9eab5-8d48-5c52-9f07-82bc59af3901", gpu_uuid.upper()]
    recorder = RecordingLibrary(_TextLibrary(texts), scrub=True)
    for _text in texts:
        buffer = ctypes.create_string_buffer(96)
        recorder.nvmlDeviceGetUUID(None, buffer, ctypes.c_uint(96))
    outs = [call["out"]["1"] for call in recorder.calls]
    assert outs[0] == "GPU-00000000-0000-4000-8000-000000000001"
    assert outs[1] == "MIG-GPU-00000000-0000-4000-8000-000000000001/3/0"
    assert outs[2] == "MIG-00000000-0000-4000-8000-000000000002"
    assert outs[3] == outs[0]


def test_a_call_missing_from_the_fixture_raises_fixture_miss():
    recorder, _facts = record(scenario_h100_node(2))
    document = copy.deepcopy(fixture_document(recorder))
    temperature = calls_of(document, "nvmlDeviceGetTemperature")[1]
    document["calls"].remove(temperature)
    with pytest.raises(FixtureMiss, match=r"nvmlDeviceGetTemperature\(\"handle:2\", 0, 0\)"):
        replay(document)


def test_a_function_absent_from_the_fixture_raises_fixture_miss_not_function_not_found():
    recorder, _facts = record(scenario_h100_node(1))
    document = fixture_document(recorder)
    document["calls"] = [call for call in document["calls"] if call["fn"] != "nvmlDeviceGetPowerUsage"]
    with pytest.raises(FixtureMiss, match="nvmlDeviceGetPowerUsage"):
        replay(document)
    with use_library(pynvml, ReplayLibrary([])):
        with pytest.raises(FixtureMiss, match="nvmlDeviceGetFanSpeed"):
            pynvml.nvmlDeviceGetFanSpeed(pynvml.c_nvmlDevice_t())


def test_a_function_the_library_lacked_replays_as_function_not_found():
    scenario = scenario_h100_node(2)
    scenario["missing_functions"] = ["nvmlDeviceGetCurrentClocksEventReasons"]
    recorder, live = record(scenario)
    document = fixture_document(recorder)
    assert calls_of(document, "nvmlDeviceGetCurrentClocksEventReasons") == [
        {"fn": "nvmlDeviceGetCurrentClocksEventReasons", "missing": True}]
    assert len(calls_of(document, "nvmlDeviceGetCurrentClocksThrottleReasons")) == 2
    _answered, replayed = replay(document)
    assert replayed == live
    assert replayed["gpus"][1]["clock_event_reasons"] == {"mask": 1, "active": ["gpu_idle"]}
    with use_library(pynvml, ReplayLibrary(document["calls"])):
        with pytest.raises(pynvml.NVMLError_FunctionNotFound):
            pynvml.nvmlDeviceGetCurrentClocksEventReasons(pynvml.c_nvmlDevice_t())


def _temperature_fixture(*temperatures):
    calls = [{"fn": "nvmlDeviceGetHandleByIndex_v2", "args": [0, None], "ret": 0, "out": {"1": "handle:1"}}]
    calls += [{"fn": "nvmlDeviceGetTemperature", "args": ["handle:1", 0, 0], "ret": 0, "out": {"2": value}}
              for value in temperatures]
    return calls


def test_a_repeated_call_replays_its_answers_in_order_then_keeps_the_last():
    with use_library(pynvml, ReplayLibrary(_temperature_fixture(40, 47))):
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        answers = [pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU) for _call in range(3)]
    assert answers == [40, 47, 47]


def test_a_recorded_error_code_replays_as_that_nvml_error():
    calls = _temperature_fixture(40)
    calls[1].update(ret=pynvml.NVML_ERROR_GPU_IS_LOST, out={"2": 0})
    with use_library(pynvml, ReplayLibrary(calls)):
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(pynvml.NVMLError_GpuIsLost):
            pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)


def test_error_strings_are_recorded_so_replay_never_depends_on_pynvml_cache(monkeypatch):
    scenario = scenario_h100_node(1)
    scenario["gpus"][0]["errors"] = {"nvmlDeviceGetPowerUsage": pynvml.NVML_ERROR_NO_DATA}
    recorder, live = record(scenario)
    document = fixture_document(recorder)
    assert {"fn": "nvmlErrorString", "args": [pynvml.NVML_ERROR_NO_DATA], "ret": "No data", "out": {}} in \
        document["calls"]
    monkeypatch.delitem(pynvml.NVMLError._errcode_to_string, pynvml.NVML_ERROR_NO_DATA, raising=False)
    _answered, replayed = replay(document)
    assert replayed["errors"] == live["errors"] == [
        {"gpu": 0, "call": "nvmlDeviceGetPowerUsage", "reason": "No data", "code": pynvml.NVML_ERROR_NO_DATA}]


def test_use_library_restores_pynvml_state():
    before_lib = pynvml.nvmlLib
    pynvml._nvmlGetFunctionPointer_cache["sentinel"] = "kept"
    try:
        with use_library(pynvml, ReplayLibrary([])) as library:
            assert pynvml.nvmlLib is library
            assert "sentinel" not in pynvml._nvmlGetFunctionPointer_cache
        assert pynvml.nvmlLib is before_lib
        assert pynvml._nvmlGetFunctionPointer_cache["sentinel"] == "kept"
    finally:
        pynvml._nvmlGetFunctionPointer_cache.pop("sentinel", None)


class _Value(ctypes.Union):
    _fields_ = [("as_uint", ctypes.c_uint), ("as_bytes", ctypes.c_uint8 * 4)]


class _Inner(ctypes.Structure):
    _fields_ = [("start", ctypes.c_uint), ("size", ctypes.c_uint)]


class _Record(ctypes.Structure):
    _fields_ = [("label", ctypes.c_char * 16), ("owner", ctypes.POINTER(_Inner)), ("value", _Value),
                ("inner", _Inner), ("raw", ctypes.c_uint8 * 3), ("flag", ctypes.c_uint, 1)]


class _StructLibrary:
    """Writes every kind of field into a _Record, including a pointer it owns."""

    def __init__(self):
        self._owned = _Inner(1, 2)

    def nvmlFill(self, ref):
        record = ref._obj
        record.label = b"MIG 1g.10gb"
        record.owner = ctypes.pointer(self._owned)
        record.value.as_uint = 0x01020304
        record.inner.start, record.inner.size = 4, 2
        record.raw[:] = [7, 8, 9]
        record.flag = 1
        return 0


def test_structures_unions_arrays_and_pointers_serialise_generically_and_write_back():
    recorder = RecordingLibrary(_StructLibrary(), scrub=False)
    recorder.nvmlFill(ctypes.byref(_Record()))
    out = recorder.calls[0]["out"]["0"]
    assert out == {"label": "MIG 1g.10gb", "owner": "handle:1", "value": "04030201",
                   "inner": {"start": 4, "size": 2}, "raw": [7, 8, 9], "flag": 1}

    replayed = _Record()
    ReplayLibrary(json.loads(json.dumps(recorder.calls))).nvmlFill(ctypes.byref(replayed))
    assert (replayed.label, replayed.value.as_uint, replayed.inner.start, replayed.inner.size) == (
        b"MIG 1g.10gb", 0x01020304, 4, 2)
    assert list(replayed.raw) == [7, 8, 9] and replayed.flag == 1
    assert ctypes.cast(replayed.owner, ctypes.c_void_p).value
