"""tb_iotrace.recording.tf_loop_signal and tf_iterator count TensorFlow's loop calls
(tb_iotrace.recording.loop_activity): a tf.function call (Keras' fit calls its train step so) and
a tf.data iterator's next() from Python each count one; the wrappers go in once."""
from __future__ import annotations

import pytest


@pytest.mark.tf
def test_tf_function_calls_and_iterator_nexts_count() -> None:
    tf = pytest.importorskip("tensorflow")
    from tb_iotrace.recording import tf_iterator, tf_loop_signal
    from tb_iotrace.recording.loop_activity import TF, TORCH, snapshot

    tf_loop_signal.install()
    tf_loop_signal.install()          # once: a second install does not count twice
    tf_iterator.wrap_iterators()

    @tf.function
    def double(x):  # type: ignore[no-untyped-def]
        return x * 2

    before = snapshot()
    for _ in range(3):
        double(tf.constant(1.0))
    mid = snapshot()
    assert mid[TF] - before[TF] == 3 and mid[TORCH] == before[TORCH]
    for _ in iter(tf.data.Dataset.range(4)):
        pass
    # four elements and the end of the sequence: five next() calls
    assert snapshot()[TF] - mid[TF] == 5
