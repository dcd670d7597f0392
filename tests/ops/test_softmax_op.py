"""Unit tests of workshop.ops.softmax (torch.ops.workshop.softmax): values, layouts, special values, errors,
autograd, opcheck, compile. On the CPU the kernels run in Triton's interpreter, so shapes stay small."""

import pytest
import torch

from workshop.ops import softmax, softmax_launch, softmax_op, triton_launch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_registered_once_under_the_workshop_namespace_with_the_public_api():
    schema = torch.ops.workshop.softmax.default._schema
    assert str(schema) == "workshop::softmax(Tensor x, SymInt dim=-1) -> Tensor"
    assert torch.Tag.pt2_compliant_tag in torch.ops.workshop.softmax.default.tags
    assert ("custom_op" if softmax_op.INTERPRETED else "triton_op") == softmax_op.KIND
    # torch.library.custom_op (triton_op makes one too) knows it: its CustomOpDef holds the registrations
    opdef = torch._library.custom_ops._maybe_get_opdef("workshop::softmax")
    assert opdef._setup_context_fn is not None and opdef._backward_fn is not None
    if softmax_op.KIND == "custom_op":
        # its fake is ours (register_fake); triton_op derives one itself, as torch 2.11 on the H200 does
        assert opdef._abstract_fn is not None


def test_the_other_registration_is_a_twin_under_its_own_namespace():
    other = "triton_op" if softmax_op.KIND == "custom_op" else "custom_op"
    twin = softmax_op.registered_as(other)
    assert twin.kind == other and twin.forward.namespace == f"workshop_{other}"
    assert softmax_op.registered_as(softmax_op.KIND) is softmax_op.OPS
    x = torch.randn(5, 40, device=DEVICE, requires_grad=True)
    torch.testing.assert_close(twin.forward(x, -1), softmax(x))
    (dx,) = torch.autograd.grad(twin.forward(x, -1).sum(), x)
    torch.testing.assert_close(dx, torch.zeros_like(dx), atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    "dtype,tol",
    [(torch.float32, 1e-6), (torch.float64, 1e-12), (torch.float16, 1e-3), (torch.bfloat16, 8e-3)],
)
def test_matches_torch_softmax_per_dtype(dtype, tol):
    x = torch.randn(33, 600, device=DEVICE).to(dtype)
    y = softmax(x)
    assert y.dtype == dtype and y.shape == x.shape
    assert (y.double() - torch.softmax(x.double(), -1)).abs().max() < tol


@pytest.mark.parametrize(
    "shape,dim", [((5, 7, 9), 0), ((5, 7, 9), 1), ((5, 7, 9), -1), ((11,), 0), ((), 0)]
)
def test_any_dim_and_leading_shape(shape, dim):
    x = torch.randn(shape, device=DEVICE)
    torch.testing.assert_close(softmax(x, dim), torch.softmax(x, dim))


def test_non_contiguous_inputs():
    x = torch.randn(20, 30, device=DEVICE)
    for t, dim in [(x.t(), -1), (x[:, ::3], -1), (x[::2], -1), (x[:1].expand(6, 30), -1), (x, 0)]:
        torch.testing.assert_close(softmax(t, dim), torch.softmax(t, dim))


@pytest.mark.parametrize("n_cols", [37, 600])
def test_special_values_like_torch(n_cols):
    from workshop.labs.custom_op.grading.correctness import special_rows

    x = special_rows(n_cols, DEVICE)
    torch.testing.assert_close(softmax(x), torch.softmax(x, -1), equal_nan=True)


@pytest.fixture
def tiny_pieces(monkeypatch):
    """The long-row kernels made cheap: rows longer than 8 go in pieces of 16 (a 50-long row: 4, the last partial);
    on CUDA cooperative, as if the input did not fit in L2."""
    monkeypatch.setattr(softmax_launch, "ONE_PASS_MAX", 8)
    monkeypatch.setattr(softmax_launch, "CHUNK", 16)
    monkeypatch.setattr(softmax_launch, "l2_bytes", lambda device: 0)


def test_long_row_kernels_match_torch_with_special_values(tiny_pieces):
    """Split kernels under the interpreter, cooperative ones on CUDA (which wait for each other: programs that run
    one after another, as in the interpreter, cannot)."""
    from workshop.labs.custom_op.grading.correctness import special_rows

    x = special_rows(50, DEVICE)
    with triton_launch.recording() as launches:
        y = softmax(x)
    torch.testing.assert_close(y, torch.softmax(x, -1), equal_nan=True)
    expected = ["_fwd_partials", "_fwd_finish"] if softmax_op.INTERPRETED else ["_fwd_cooperative"]
    assert [launch.kernel for launch in launches] == expected
    p = torch.softmax(torch.randn(5, 50, device=DEVICE), -1)
    dy = torch.randn(5, 50, device=DEVICE)
    dx = torch.ops.workshop.softmax_backward(p, dy, -1)
    torch.testing.assert_close(dx, torch.ops.aten._softmax_backward_data(dy, p, -1, torch.float32))


def test_long_row_through_the_op():
    x = torch.randn(1, softmax_launch.ONE_PASS_MAX + 1000, device=DEVICE)
    torch.testing.assert_close(softmax(x), torch.softmax(x, -1))


def test_launch_record_names_the_kernels_grids_and_parameters():
    x = torch.randn(33, 600, device=DEVICE)
    assert triton_launch._recorded is None
    with triton_launch.recording() as launches:
        y = softmax(x.clone().requires_grad_())
        y.backward(torch.ones_like(y))
        with triton_launch.recording() as inner:
            softmax(x)
    # whole rows of 600 (padded to 1,024) a program, the plan's: the backward's tile is its own on a GPU
    rows = [launch.constexprs["ROWS"] for launch in launches]
    assert [(launch.kernel, launch.grid) for launch in launches] == [
        ("_fwd_one_pass", (-(-33 // rows[0]),)),
        ("_bwd_one_pass", (-(-33 // rows[1]),)),
        ("_fwd_one_pass", (-(-33 // rows[2]),)),
    ]
    assert launches[0].constexprs["BLOCK_N"] == 1024 and launches[0].constexprs["ALIGN"] == 8
    assert len(inner) == 1 and triton_launch._recorded is None
    softmax(x)  # not recording: nothing collected anywhere
    assert len(launches) == 3


@pytest.mark.parametrize("shape,dim", [((0, 5), -1), ((4, 0), -1), ((2, 0, 3), 1)])
def test_empty_tensors(shape, dim):
    x = torch.randn(shape, device=DEVICE, requires_grad=True)
    y = softmax(x, dim)
    assert y.shape == x.shape
    (dx,) = torch.autograd.grad(y.sum(), x)
    assert dx.shape == x.shape


def test_bad_inputs_name_the_problem():
    with pytest.raises(TypeError, match="floating-point"):
        softmax(torch.arange(5, device=DEVICE))
    with pytest.raises(IndexError, match="dim 3 is out of range"):
        softmax(torch.randn(2, 3, device=DEVICE), 3)
    other = "meta" if DEVICE == "cpu" else "cpu"
    y = torch.rand(2, 3, device=DEVICE)
    with pytest.raises(RuntimeError, match="same device"):
        torch.ops.workshop.softmax_backward(y, y.to(other), -1)
    with pytest.raises(ValueError, match="same shape"):
        torch.ops.workshop.softmax_backward(y, y[:1], -1)
    with pytest.raises(ValueError, match="kind must be"):
        softmax_op.define("workshop_test::softmax", "cuda_op")


def test_gradcheck_and_gradgradcheck_float64():
    x = torch.randn(4, 9, dtype=torch.float64, device=DEVICE, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: softmax(t, 0), (x,), fast_mode=True)
    assert torch.autograd.gradgradcheck(lambda t: softmax(t, -1), (x,), fast_mode=True)


def _backward_operator_calls(x: torch.Tensor, create_graph: bool) -> tuple[int, list[str]]:
    """The calls of workshop::softmax_backward that a gradient through the op makes, seen by the profiler (which
    puts no dispatch mode in their way), and the kernels launched."""
    cpu = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=cpu) as prof, triton_launch.recording() as launches:
        torch.autograd.grad(softmax(x).sum(), x, create_graph=create_graph)
    names = [event.name for event in prof.events()]
    return names.count("workshop::softmax_backward"), [launch.kernel for launch in launches]


def test_an_eager_backward_runs_the_kernel_without_the_operator_and_a_recorded_one_calls_it():
    x = torch.randn(4, 40, device=DEVICE, requires_grad=True)
    kernels = ["_fwd_one_pass", "_bwd_one_pass"]
    assert _backward_operator_calls(x, create_graph=False) == (0, kernels)
    assert _backward_operator_calls(x, create_graph=True) == (1, kernels)


def _forgets_tracing(*tensors):
    """A planted wrong `runs_eagerly`: it asks only about grad mode, not about fake tensors or dispatch modes."""
    return not torch.is_grad_enabled()


@pytest.mark.parametrize("planted", [False, True])
def test_a_backward_on_fake_tensors_goes_through_the_operator(monkeypatch, planted):
    from torch._subclasses.fake_tensor import FakeTensorMode

    if planted:
        if DEVICE == "cuda":
            pytest.skip("a CUDA launch on fake tensors would run the kernel on null pointers")
        monkeypatch.setattr(softmax_op, "runs_eagerly", _forgets_tracing)
    with FakeTensorMode():
        x = torch.randn(4, 40, device=DEVICE, requires_grad=True)
        if planted:  # the kernel is handed fake tensors, which hold no data
            with pytest.raises(Exception):  # noqa: B017 (whatever the launch of fake tensors raises)
                torch.autograd.grad(softmax(x).sum(), x)
            return
        (dx,) = torch.autograd.grad(softmax(x).sum(), x)
    assert dx.shape == x.shape


def test_opcheck_contiguous_and_strided():
    x = torch.randn(6, 24, device=DEVICE)
    for args in [(x.clone().requires_grad_(), -1), (x[:, ::2].clone().t().requires_grad_(), 0)]:
        result = torch.library.opcheck(torch.ops.workshop.softmax.default, args)
        assert set(result.values()) == {"SUCCESS"}, result


def test_compile_fullgraph_no_graph_breaks_matches_eager():
    def f(x):
        return softmax(x.sin(), -1) * 2

    x = torch.randn(16, 40, device=DEVICE)
    assert torch._dynamo.explain(f)(x).graph_break_count == 0
    torch.testing.assert_close(torch.compile(f, fullgraph=True)(x), f(x))


@pytest.mark.gpu
def test_gpu_triton_op_is_inlined_by_inductor():
    from workshop.labs.custom_op import inductor_code

    x, dy = torch.randn(64, 600, device="cuda"), torch.randn(64, 600, device="cuda")
    (y, _), sources = inductor_code.compile_and_capture(torch.ops.workshop.softmax, x, dy)
    found = inductor_code.census(sources, "workshop")
    assert found["extern_calls"] == 0 and found["inlined_kernel_defs"] >= 2, found
    torch.testing.assert_close(y, torch.softmax(2 * x, -1) * 3)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(4096, 600), (64, 262144), (300, 40000), (16, 262144)])
def test_gpu_big_shapes_fwd_bwd(shape):
    x = torch.randn(shape, device="cuda", requires_grad=True)
    dy = torch.randn(shape, device="cuda")
    y = softmax(x)
    (dx,) = torch.autograd.grad(y, x, dy)
    ref = torch.softmax(x, -1)
    (ref_dx,) = torch.autograd.grad(ref, x, dy)
    torch.testing.assert_close(y, ref)
    torch.testing.assert_close(dx, ref_dx)


@pytest.mark.gpu
def test_gpu_long_rows_compiled_inline_the_cooperative_kernels(monkeypatch):
    """Rows past one pass under torch.compile: the cooperative kernels (atomics, a wait) inlined by Inductor."""
    monkeypatch.setattr(
        softmax_launch, "l2_bytes", lambda device: 0
    )  # cooperative at this small size too
    import re

    from workshop.labs.custom_op import inductor_code

    x, dy = torch.randn(4, 40000, device="cuda"), torch.randn(4, 40000, device="cuda")
    (y, dx), sources = inductor_code.compile_and_capture(torch.ops.workshop.softmax, x, dy)
    code = "\n".join(sources)
    for kernel in ("_fwd_cooperative", "_bwd_cooperative"):
        assert re.search(rf"def {kernel}(?:_\d+)?\(", code), kernel
    x_ = x.clone().requires_grad_()
    ref = torch.softmax(2 * x_, -1) * 3
    (ref_dx,) = torch.autograd.grad(ref, x_, dy)
    torch.testing.assert_close(y, ref.detach())
    torch.testing.assert_close(dx, ref_dx)


def test_the_interpreter_is_chosen_in_one_place(monkeypatch, tmp_path):
    """workshop.foundations.device.use_triton_interpreter: the CPU gets Triton's interpreter, CUDA does not; a lab's
    environment (runner.lab_environment) is decided by it too."""
    from workshop.foundations.device import use_triton_interpreter
    from workshop.harness.runner import lab_environment

    cpu_env, cuda_env = {}, {}
    assert use_triton_interpreter(cpu_env, "cpu") and cpu_env == {"TRITON_INTERPRET": "1"}
    assert not use_triton_interpreter(cuda_env, "cuda") and cuda_env == {}
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    for device in ("cpu", "cuda"):
        (tmp_path / device).mkdir()
        env = lab_environment(device, tmp_path / device)
        assert env.get("TRITON_INTERPRET") == ("1" if device == "cpu" else None)
    # this session: conftest chose it
    assert softmax_op.INTERPRETED is not torch.cuda.is_available()
