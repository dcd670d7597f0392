"""The instructor's predictions: the answers to the tensor lab's questions (grading/exercises.py, QUESTIONS), as
the run measures them on the shipped MiniGPT (anatomy.py, versions.py)."""

PREDICTIONS = {
    "wt_stride": [1, 64],
    "narrow_offset": 6400,
    "step_stride": [192, 1],
    "step_offset": 144,
    "expand_stride": [0, 1],
    "sharing_w": ["W.t()", "W.narrow(0, 100, 50)", "W[2::3, 16:]"],
    "bumping_ops": ["add_", "setitem", "copy_", "view_mul_"],
    "y_version": 2,
    "error_at_version": 1,
    "error_shape": [176, 64],
}
