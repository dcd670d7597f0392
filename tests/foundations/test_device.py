"""foundations.device: --device auto is CUDA where torch sees a GPU, else the CPU; cuda asked for where there is none
is one line saying what to use instead; Triton's interpreter is switched on for the CPU, before triton's import,
and an environment given to a lab's process gets it without touching this one's."""

from __future__ import annotations

import pytest

from workshop.foundations import device
from workshop.foundations.device import DeviceError


@pytest.mark.parametrize(
    "has_cuda, requested, expected", [(True, "auto", "cuda"), (False, "auto", "cpu")]
)
def test_auto_is_cuda_where_there_is_one(monkeypatch, has_cuda, requested, expected):
    monkeypatch.setattr(device, "cuda_available", lambda: has_cuda)
    assert device.resolve(requested) == expected
    assert device.resolve("cpu") == "cpu"


def test_cuda_without_a_gpu_and_an_unknown_device_are_one_line(monkeypatch):
    monkeypatch.setattr(device, "cuda_available", lambda: False)
    with pytest.raises(DeviceError, match="torch sees no CUDA GPU here; use --device cpu"):
        device.resolve("cuda")
    with pytest.raises(DeviceError, match=r"unknown device 'gpu'; choose one of auto, cpu, cuda"):
        device.resolve("gpu")


def test_without_a_gpu_device_file_torch_is_not_asked(monkeypatch):
    monkeypatch.setattr(device.sys, "platform", "linux")
    monkeypatch.setattr(device.glob, "glob", lambda pattern: [])
    assert device.cuda_available() is False


def test_a_labs_environment_gets_the_interpreter_on_the_cpu_only():
    cpu_env, cuda_env = {}, {}
    assert device.use_triton_interpreter(cpu_env, "cpu") and cpu_env == {"TRITON_INTERPRET": "1"}
    assert not device.use_triton_interpreter(cuda_env, "cuda") and cuda_env == {}


def test_triton_imported_before_the_interpreter_is_refused_with_the_fix(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setitem(device.sys.modules, "triton", object())
    with pytest.raises(ImportError, match="set TRITON_INTERPRET=1 in the environment"):
        device.use_triton_interpreter(device.os.environ, "cpu")
