"""What the browser tests share: a real TensorBoard process on a logdir, and the JS handles
and pixel checks of the I/O tab inside TensorBoard's page."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

TENSORBOARD = Path(sys.executable).with_name("tensorboard")

# JS: the plugin's iframe window / document, and the app object it exposes.
W = "document.querySelector('iframe[src*=\"plugin_entry\"]').contentWindow"
APP = f"{W}.__iotrace"
D = f"{W}.document"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def tensorboard(logdir: Path, log_path: Path) -> Iterator[str]:
    """TensorBoard (with the plugin installed) serving ``logdir`` on a free loopback port, its
    output in ``log_path``; yields its base URL once it lists its plugins, stops it after."""
    exe = [str(TENSORBOARD)] if TENSORBOARD.exists() else [sys.executable, "-m", "tensorboard.main"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    url = f"http://127.0.0.1:{free_port()}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([*exe, "--logdir", str(logdir), "--host", "127.0.0.1", "--port", url.rsplit(":", 1)[1]],
                                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    with urllib.request.urlopen(url + "/data/plugins_listing", timeout=5) as resp:
                        if resp.status == 200:
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("TensorBoard did not start: " + log_path.read_text(errors="replace")[-3000:])
                time.sleep(0.3)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def ink(page, lane_key: str, timeout: float = 30) -> float:
    """Fraction of the lane's canvas band that is not background (white or the alternate
    lane tint, nor a step band): what was actually drawn there; -1 if the lane is not laid
    out. The track canvas covers the scroll viewport only: the lane is scrolled into view
    first, and read once the items of its lane have come."""
    laid_out = page.evaluate(f"{APP}.timeline.showLane({lane_key!r}) !== null")
    if not laid_out:
        return -1
    page.wait_for(f"{APP}.timeline.hasLane({lane_key!r}) && !{APP}.timeline.root.classList.contains('busy')", timeout=timeout)
    return page.evaluate(f"""(() => {{
        const t = {APP}.timeline;
        t.draw();
        const tr = t.layout.tracks.find((x) => x.kind === 'lane' && x.lane.key === {lane_key!r});
        const dpr = {W}.devicePixelRatio || 1;
        const y0 = Math.max(0, Math.round((tr.y - t.viewTop) * dpr));
        const y1 = Math.min(t.canvas.height, Math.round((tr.y + tr.h - t.viewTop) * dpr));
        if (y1 <= y0) return 0;
        const img = t.canvas.getContext('2d').getImageData(0, y0, t.canvas.width, y1 - y0).data;
        let ink = 0;
        for (let i = 0; i < img.length; i += 4) {{
          const r = img[i], g = img[i + 1], b = img[i + 2];
          if (img[i + 3] === 0) continue;  // nothing painted (e.g. a canvas too big to allocate)
          const bg = (r === 255 && g === 255 && b === 255) || (r === 248 && g === 249 && b === 251);
          const step = r > 240 && g > 220 && b < 235 && b > 150;
          if (!bg && !step) ink++;
        }}
        return ink / (img.length / 4);
    }})()""")
