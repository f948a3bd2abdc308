// The verdict box's text: bound, the wait's shares, what was not measured, advice.
import { test } from "node:test";
import assert from "node:assert/strict";
import { verdictLines } from "../../plugin_frontend/views/findings.js";

test("a measured verdict names the bound, the shares and the advice", () => {
  const t = verdictLines({ host: "w0", bound: "input", input_wait_share: 0.4,
    wait_breakdown: { file_io: 0.25, decode: 0.75, starved: 0, copy: 0, other: 0 }, unmeasured: [],
    unmeasured_share: 0, reason: "", advice: "num_workers=2 -> 5: expected step time -40%." });
  assert.equal(t.head, "Input-bound (w0): the step waits for input 40% of its time");
  assert.equal(t.wait, "The wait: file I/O 25%, decode 75%");
  assert.equal(t.unmeasured, "");
  assert.equal(t.advice, "num_workers=2 -> 5: expected step time -40%.");
  assert.equal(verdictLines({ host: "w0", bound: "input", input_wait_share: 0.4 }, { host: false }).head,
    "Input-bound: the step waits for input 40% of its time");
});

test("what cannot be measured is said, not guessed", () => {
  const t = verdictLines({ bound: "not input", input_wait_share: 0.02,
    wait_breakdown: { file_io: 0.05, decode: null, starved: null, copy: 0, other: 0 },
    unmeasured: ["decode", "starved"], unmeasured_share: 0.95, reason: "no fetch spans", advice: "Not input-bound." });
  assert.equal(t.head, "Not input-bound: the step waits for input 2.0% of its time");
  assert.equal(t.wait, "The wait: file I/O 5.0%, decode or starved (not measured) 95%");
  assert.equal(t.unmeasured, "no fetch spans");
});

test("no verdict without a timeline", () => {
  const t = verdictLines({ bound: "unknown", input_wait_share: null, wait_breakdown: {}, advice: "No verdict: x." });
  assert.equal(t.head, "No verdict");
  assert.equal(t.wait, "");
});

test("the job verdict's box names the rank that holds the others, and a rank says it waits for it", async () => {
  const { jobVerdictLines } = await import("../../plugin_frontend/views/findings.js");
  const t = jobVerdictLines({ ranks: 4, matched_steps: 6, bound: "input", straggler: { label: "rank 2" },
    advice: "Input-bound on rank 2 (h2): ..." });
  assert.equal(t.head, "Job (4 ranks, 6 steps matched by number): Input-bound on rank 2");
  assert.equal(t.advice, "Input-bound on rank 2 (h2): ...");
  assert.equal(jobVerdictLines(null), null);
  assert.equal(jobVerdictLines({ ranks: 3, matched_steps: 0, bound: "unknown", straggler: null }).head,
    "Job (3 ranks, no steps matched): No verdict");
  const v = verdictLines({ host: "h0", bound: "not input", input_wait_share: 0.001, collectives: true,
    collective_wait_share: 0.83, waits_for: { label: "rank 2" } });
  assert.equal(v.head, "Waits for rank 2's input (job verdict) (h0): the step waits for input 0.1% of its time, in collectives 83%");
});

test("the job verdict of /hosts (stored facts) stands in until the findings bring their own", async () => {
  const { withHostsJob } = await import("../../plugin_frontend/views/findings.js");
  const stored = { ranks: 64, matched_steps: 6, bound: "input", straggler: { label: "rank 7" } };
  const pending = { findings: [], pending: 60, hosts: 64, job_verdict: null };
  assert.deepEqual(withHostsJob(pending, stored), { ...pending, job_verdict: stored });
  assert.equal(pending.job_verdict, null);                       // the answer itself is not changed
  const own = { ...pending, pending: 0, job_verdict: { ...stored, ranks: 64, advice: "from the findings" } };
  assert.equal(withHostsJob(own, stored), own);
  assert.equal(withHostsJob(pending, null), pending);
  const failed = { error: "HTTP 500" };
  assert.equal(withHostsJob(failed, stored), failed);
});
