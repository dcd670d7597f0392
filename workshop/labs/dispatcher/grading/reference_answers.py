"""The instructor's predictions and checked answers (the dispatcher lab's exercises `predictions` and `answers`),
as torch 2.11 and 2.13 dispatch on the CPU. A plain run grades these against the run, so a torch that
dispatches otherwise fails here first."""

PREDICTIONS = {
    "cpu/grad/3d": {"handled_at": "AutogradCPU", "gemm_op": "aten::addmm"},
    "cpu/grad/2d": {"handled_at": "AutogradCPU", "gemm_op": "aten::addmm"},
    "cpu/requires_grad_off/3d": {"handled_at": "AutogradCPU", "gemm_op": "aten::addmm"},
    "cpu/no_grad/3d": {"handled_at": "AutogradCPU", "gemm_op": "aten::addmm"},
    "cpu/inference_mode/3d": {"handled_at": "CPU", "gemm_op": "aten::addmm"},
    "cpu/autocast_bf16/3d": {"handled_at": "AutocastCPU", "gemm_op": "aten::addmm"},
    "cpu/inference_mode/2d": {"handled_at": "CPU", "gemm_op": "aten::addmm"},
    "cpu/matmul/2d": {"handled_at": "AutogradCPU", "gemm_op": "aten::mm"},
    "cpu/matmul/3d": {"handled_at": "AutogradCPU", "gemm_op": "aten::mm"},
    "cpu/matmul_batched/3d": {"handled_at": "AutogradCPU", "gemm_op": "aten::bmm"},
}

ANSWERS = {
    "addmm_ADInplaceOrView_kernel": "backend fallback",
    "addmm_ADInplaceOrView_fallthrough": True,
    "inference_result_keys": ["AutocastCPU", "CPU"],
    "addmm_chain_without_recorder": ["AutogradCPU", "CPU"],
    "autocast_key_excluded_for_addmm": "AutocastCPU",
    "matmul_3d_last_op": "aten::_unsafe_view",
}
