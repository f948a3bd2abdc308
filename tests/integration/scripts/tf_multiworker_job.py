"""Two local tf.distribute.MultiWorkerMirroredStrategy workers on CPU (tests/integration/test_tf_multiworker.py).

    python tf_multiworker_job.py WORK

Each worker (a spawned process, TF_CONFIG naming both on free loopback ports) reads its own
64 small files through ``tf.data`` (a ``py_function`` per file, no auto-sharding), trains a
one-layer model with the strategy's all-reduce, and profiles 6 steps (``train`` TraceMes with
a step number) into WORK/logs<index>. Worker 1's read path sleeps 100 ms per file (slow by
construction): worker 0 waits for it in ``CollectiveReduceV2``.
Both workers run on one machine, so both captures are named after its host name; the test
puts them into one run as worker0/worker1, as two hosts' captures would be.
Python's fault handler is on in each worker: a crash prints where it happened (the test tells
TensorFlow's own crash at the profiler's stop from any other, see test_tf_multiworker.py).
"""
import faulthandler, json, os, socket, sys, time
import multiprocessing as mp


def worker(idx, ports, work):
    faulthandler.enable()
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                                          "task": {"type": "worker", "index": idx}})
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import tb_iotrace
    tb_iotrace.enable()
    import numpy as np
    import tensorflow as tf
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    folder = os.path.join(work, f"data{idx}")
    os.makedirs(folder, exist_ok=True)
    paths = []
    for i in range(64):
        p = os.path.join(folder, f"s{i}.bin")
        with open(p, "wb") as fh:
            fh.write(np.random.rand(64).astype("float32").tobytes())
        paths.append(p)

    def load(p):
        if idx == 1:
            time.sleep(0.1)
        with open(p.numpy().decode(), "rb") as fh:
            return np.frombuffer(fh.read(), np.float32)

    ds = tf.data.Dataset.from_tensor_slices(paths).map(
        lambda p: tf.reshape(tf.py_function(load, [p], tf.float32), [64])).batch(4).repeat()
    opts = tf.data.Options()
    opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    ds = ds.with_options(opts)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((64,)), tf.keras.layers.Dense(1)])
        opt = tf.keras.optimizers.SGD(0.01)
    dist = iter(strategy.experimental_distribute_dataset(ds))

    @tf.function
    def step(x):
        def body(x):
            with tf.GradientTape() as t:
                loss = tf.reduce_mean(tf.square(model(x)))
            g = t.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(g, model.trainable_variables))
            return loss
        return strategy.run(body, args=(x,))

    for _ in range(2):
        step(next(dist))
    tf.profiler.experimental.start(os.path.join(work, f"logs{idx}"))      # one per worker: same host name
    for k in range(6):
        with tf.profiler.experimental.Trace("train", step_num=k, _r=1):
            step(next(dist))
    tf.profiler.experimental.stop()
    print("worker", idx, "done", flush=True)


def main():
    work = sys.argv[1]
    ports = []
    for _ in range(2):
        s = socket.socket(); s.bind(("127.0.0.1", 0)); ports.append(s.getsockname()[1]); s.close()
    ctx = mp.get_context("spawn")
    ps = [ctx.Process(target=worker, args=(i, ports, work)) for i in range(2)]
    for p in ps: p.start()
    for p in ps: p.join(300)
    for p in ps:
        if p.is_alive(): p.kill()
    sys.exit(max(abs(p.exitcode or 0) for p in ps))


if __name__ == "__main__":
    main()
