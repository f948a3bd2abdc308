"""Subprocess workload for test_jax_profiler: a grain pipeline (ArrayRecord source, map, two
prefetch threads) consumed inside a JAX profile window, one StepTraceAnnotation per element.

argv: WORKDIR.  Writes WORKDIR/result.json with what the test checks.
"""
import glob
import json
import os
import sys

import tb_iotrace

tb_iotrace.enable()

import grain  # noqa: E402
import jax  # noqa: E402
from array_record.python.array_record_module import ArrayRecordWriter  # noqa: E402

work = sys.argv[1]
os.makedirs(work, exist_ok=True)
path = os.path.join(work, "data.array_record")
writer = ArrayRecordWriter(path, "group_size:1")
for i in range(64):
    writer.write(bytes([i]) * 4000)
writer.close()
ds = (grain.MapDataset.source(grain.sources.ArrayRecordDataSource([path])).map(len)
      .to_iter_dataset(grain.ReadOptions(num_threads=2, prefetch_buffer_size=8)))
jax.profiler.start_trace(os.path.join(work, "logs"))
total = 0
for i, n in enumerate(ds):
    with jax.profiler.StepTraceAnnotation("train", step_num=i):
        total += n
jax.profiler.stop_trace()
result = {"path": path, "total": total,
          "xplanes": sorted(glob.glob(os.path.join(work, "logs", "**", "*.xplane.pb"), recursive=True))}
with open(os.path.join(work, "result.json"), "w") as f:
    json.dump(result, f)
