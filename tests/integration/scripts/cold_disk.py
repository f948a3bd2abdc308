"""Helpers the throttled-disk workloads share (findings_pipelines.py, slowfs_pipelines.py): drop
files from the page cache so their reads go to the disk, and move this process into the cgroup
whose block throttle caps that disk's reads (and back)."""
import os


def join(group: str) -> None:
    """Move this process (all its threads) into the cgroup directory ``group``."""
    with open(os.path.join(group, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))


def evict(paths: list[str]) -> None:
    """Drop the files from the page cache (clean pages only: write them with fsync first)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
