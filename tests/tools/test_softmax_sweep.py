"""The softmax sweep's settings: softmax_launch's constants patched inside, restored after."""


def test_sweep_settings_are_patched_and_restored():
    from tools import softmax_sweep as sweep
    from workshop.ops import softmax_launch

    before = (softmax_launch.CHUNK, softmax_launch.multiprocessors, softmax_launch.l2_bytes)
    with sweep.setting({"CHUNK": 16, "split": True, "cooperative": True}):
        assert softmax_launch.CHUNK == 16
        assert softmax_launch.multiprocessors(None) == softmax_launch.l2_bytes(None) == 0
    after = (softmax_launch.CHUNK, softmax_launch.multiprocessors, softmax_launch.l2_bytes)
    assert after == before
